// Package pgtest gives tests a migrated, empty PostgreSQL schema of their
// own on the server CI starts.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"

	_ "github.com/lib/pq" // the driver

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
)

// DatabaseURL is the server tests use: $FLOWGEN_TEST_DATABASE_URL, else the
// local server .ci/run starts.
func DatabaseURL() string {
	if u := os.Getenv("FLOWGEN_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// FreshSchema creates a migrated schema for one test, dropped when the test
// ends, and returns a connection string whose search_path points at it. A
// missing server fails the test: CI always has one.
func FreshSchema(t testing.TB) string {
	t.Helper()
	admin, err := sql.Open("postgres", DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "flowgen_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", DatabaseURL(), err)
	}
	t.Cleanup(func() {
		if a, err := sql.Open("postgres", DatabaseURL()); err == nil {
			a.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			a.Close()
		}
	})
	sep := "?"
	if strings.Contains(DatabaseURL(), "?") {
		sep = "&"
	}
	url := DatabaseURL() + sep + "search_path=" + schema
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := pgstore.MigrateUp(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return url
}

// Cluster runs pg_ctlcluster on the local cluster the way .ci/run starts it:
// action is "stop", "start" or "restart". Only tests that may take the
// server away from every other test (the chaos target runs them alone) call
// it. Starting a running cluster is not an error.
func Cluster(t testing.TB, action string) {
	t.Helper()
	versions, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(versions) == 0 {
		t.Fatalf("cannot find the PostgreSQL cluster to %s: %v", action, err)
	}
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", versions[0].Name(), "main", action).CombinedOutput()
	if err != nil && !(action == "start" && strings.Contains(string(out), "already running")) {
		t.Fatalf("pg_ctlcluster %s: %v\n%s", action, err, strings.TrimSpace(string(out)))
	}
	t.Logf("PostgreSQL: %s", action)
}
