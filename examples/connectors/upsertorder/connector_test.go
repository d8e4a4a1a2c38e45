package upsertorder

import (
	"database/sql"
	"testing"

	_ "github.com/lib/pq" // the driver

	"github.com/flowgen-dev/flowgen/runtime/fixturetest"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

// FixtureEnv binds the fixtures to a fresh schema on the PostgreSQL server
// CI runs, with the orders table the connector writes.
func (*Connector) FixtureEnv(t testing.TB) fixturetest.Env {
	db, err := sql.Open("postgres", pgtest.FreshSchema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE orders (
		order_id text PRIMARY KEY, charge_id text NOT NULL, amount_cents bigint NOT NULL,
		currency text NOT NULL, status text NOT NULL, row_version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return fixturetest.Env{DB: db}
}
