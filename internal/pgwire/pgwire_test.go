package pgwire_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/lib/pq"

	"github.com/flowgen-dev/flowgen/internal/pgwire"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// TestCounts runs one transaction of two parameterised statements on the
// real server, with and without lib/pq's binary parameters, and checks
// what the counter saw: four statements (BEGIN, two, COMMIT), one commit,
// and one round trip per statement with binary parameters against two per
// parameterised statement without (Parse and Describe, then Bind and
// Execute).
func TestCounts(t *testing.T) {
	url := pgtest.DatabaseURL()
	for _, tc := range []struct {
		binary     bool
		roundTrips int64
	}{{true, 4}, {false, 6}} {
		cfg, err := pq.NewConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.BinaryParameters = tc.binary
		connector, err := pq.NewConnectorConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var counter pgwire.Counter
		connector.Dialer(&counter)
		db := sql.OpenDB(connector)
		db.SetMaxOpenConns(1)
		ctx := context.Background()
		if err := db.PingContext(ctx); err != nil { // connect outside the count
			t.Fatal(err)
		}
		before := counter.Counts()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT $1::bigint + 1`, 41).Scan(&n); err != nil || n != 42 {
			t.Fatalf("select: %d %v", n, err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT length($1::bytea)`, []byte("abc")); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		got := counter.Counts().Sub(before)
		want := pgwire.Counts{RoundTrips: tc.roundTrips, Statements: 4, Commits: 1}
		if got != want {
			t.Errorf("binary parameters %v: %+v, want %+v", tc.binary, got, want)
		}
		db.Close()
	}
}
