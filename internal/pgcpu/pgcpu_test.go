package pgcpu

import (
	"database/sql"
	"testing"

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

func TestPostgresTicks(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int64
		ok   bool
	}{
		{"623 (postgres) S 1 623 623 0 -1 4194304 5205 84451 0 4 2 6 356 92 20 0 1 0", 2 + 6 + 356 + 92, true},
		{"7 (postgres) R 1 7 7 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0", 30, true},
		{"8 (go) R 1 8 8 0 -1 0 0 0 0 0 10 20 0 0 20 0 1 0", 0, false},
		{"9 (post gres)) R 1 9 9 0 -1 0 0 0 0 0 10 20 0 0", 0, false},
		{"10 (postgres) R 1", 0, false},
		{"11 (postgres) R 1 11 11 0 -1 0 0 0 0 0 x 20 0 0 20", 0, false},
	} {
		got, ok := postgresTicks([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("postgresTicks(%q) = %d, %v; want %d, %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

// TestUsedGrowsWithServerWork runs a query that costs the server some
// CPU and expects the reading to grow by at least part of it.
func TestUsedGrowsWithServerWork(t *testing.T) {
	url := pgtest.DatabaseURL()
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", url, err)
	}
	before, err := Used()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := db.QueryRow(`SELECT count(*) FROM generate_series(1, 5000000)`).Scan(&n); err != nil || n != 5000000 {
		t.Fatalf("count = %d, %v", n, err)
	}
	after, err := Used()
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 20_000_000 { // 20 ms: the query takes several times that
		t.Fatalf("server CPU grew by %v over a query that scans 5 million rows", after-before)
	}
}
