package upsertorder

import (
	"database/sql"
	"testing"

	_ "github.com/lib/pq" // the driver

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
	"github.com/flowgen-dev/flowgen/testharness/fixturetest"
)

// FixtureEnv binds the fixtures to a fresh schema on the PostgreSQL server
// CI runs; fixturetest creates the orders table there from the spec's
// fixtureEnv.database.setup.
func (*Connector) FixtureEnv(t testing.TB) fixturetest.Env {
	db, err := sql.Open("postgres", pgtest.FreshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return fixturetest.Env{DB: db}
}
