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
		db, counter := counted(t, url, tc.binary)
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

// TestInTransaction follows the server's transaction status on the real
// server: in a transaction block from BEGIN (and while it has failed)
// until COMMIT or ROLLBACK, on each connection counted once.
func TestInTransaction(t *testing.T) {
	db, counter := counted(t, pgtest.DatabaseURL(), true)
	defer db.Close()
	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	want := func(n int64, when string) {
		t.Helper()
		if got := counter.InTransaction(); got != n {
			t.Errorf("%s: %d connections in a transaction, want %d", when, got, n)
		}
	}
	want(0, "connected")
	a, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want(1, "after BEGIN")
	b, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want(2, "after a second BEGIN on another connection")
	if _, err := b.ExecContext(ctx, `SELECT 1/0`); err == nil {
		t.Fatal("division by zero succeeded")
	}
	want(2, "after a failed statement")
	if err := b.Rollback(); err != nil {
		t.Fatal(err)
	}
	want(1, "after ROLLBACK")
	if err := a.Commit(); err != nil {
		t.Fatal(err)
	}
	want(0, "after COMMIT")
	if _, err := db.ExecContext(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	want(0, "after a statement outside a transaction")
}

// TestStatements splits simple queries the way the server does.
func TestStatements(t *testing.T) {
	for _, tc := range []struct {
		text               string
		statements, commit int
	}{
		{"COMMIT", 1, 1},
		{"commit;", 1, 1},
		{"BEGIN READ WRITE; SELECT 1", 2, 0},
		{"SELECT f('a;b', E'c\\';d', \"x;y\"); COMMIT", 2, 1},
		{"SELECT 'it''s; fine'; COMMIT ; ", 2, 1},
		{"SELECT 1 -- a; comment\n; COMMITTED", 2, 0},
		{"DO $fn$ BEGIN PERFORM 1; END $fn$; SELECT $1", 2, 0},
		{"SELECT $$a;b$$;COMMIT", 2, 1},
		{" ; ;", 0, 0},
		{"SELECT 'unterminated;", 1, 0},
	} {
		s, c := pgwire.Statements([]byte(tc.text + "\x00"))
		if s != tc.statements || c != tc.commit {
			t.Errorf("Statements(%q) = %d, %d; want %d, %d", tc.text, s, c, tc.statements, tc.commit)
		}
	}
}

// TestCountsSimpleQueries checks that one simple query of three statements
// is one round trip, three statements and one commit.
func TestCountsSimpleQueries(t *testing.T) {
	db, counter := counted(t, pgtest.DatabaseURL(), false)
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	before := counter.Counts()
	if _, err := db.Exec(`BEGIN; SELECT 'a;b'; COMMIT`); err != nil {
		t.Fatal(err)
	}
	if got, want := counter.Counts().Sub(before), (pgwire.Counts{RoundTrips: 1, Statements: 3, Commits: 1}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// counted opens url with every connection counted, with or without
// lib/pq's binary parameters.
func counted(t *testing.T, url string, binary bool) (*sql.DB, *pgwire.Counter) {
	t.Helper()
	cfg, err := pq.NewConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BinaryParameters = binary
	connector, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	counter := new(pgwire.Counter)
	connector.Dialer(counter)
	return sql.OpenDB(connector), counter
}
