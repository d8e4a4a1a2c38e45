package recorder

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/flowgen-dev/flowgen/certify/wire"
	"github.com/flowgen-dev/flowgen/runtime/store/pgstore/pgtest"
)

func str(s string) wire.Value { return wire.Value{String: &s} }

// TestFixtureDBCountsChangesAndGrantsNothing: a statement is an effect
// exactly when it changes a row, a large object or a counter sequence, or
// notifies; the connector's SQL runs as a role that
// cannot reach beyond its schema; closing leaves nothing behind.
func TestFixtureDBCountsChangesAndGrantsNothing(t *testing.T) {
	ctx := context.Background()
	db, err := OpenFixtureDB(ctx, pgtest.DatabaseURL(), `CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL);
		CREATE TABLE shipments (id text PRIMARY KEY);
		CREATE TABLE invoices (n serial PRIMARY KEY, order_id text UNIQUE);
		CREATE SEQUENCE issued;
		CREATE FUNCTION announce() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('shipped', NEW.id); RETURN NULL; END $$;
		CREATE TRIGGER announce AFTER INSERT OR UPDATE ON shipments FOR EACH ROW EXECUTE FUNCTION announce()`, false)
	if err != nil {
		t.Fatal(err)
	}
	insert := wire.DBRequest{Exec: true, Query: `INSERT INTO orders VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status`, Args: []wire.Value{str("o1"), str("paid")}}
	if resp, changed := db.Do(ctx, insert); resp.Error != "" || !changed || resp.RowsAffected != 1 {
		t.Fatalf("first upsert: %+v changed %v", resp, changed)
	}
	// Postgres reports the row as affected again, but nothing changed.
	if resp, changed := db.Do(ctx, insert); resp.Error != "" || changed {
		t.Fatalf("repeated upsert: %+v changed %v", resp, changed)
	}
	// A large object is state outside any table: making one, or writing
	// into it, is an effect.
	for _, q := range []string{`SELECT lo_from_bytea(0, 'receipt')`, `SELECT lo_put((SELECT max(oid) FROM pg_largeobject_metadata WHERE lomowner = current_user::regrole), 0, 'R')`} {
		if resp, changed := db.Do(ctx, wire.DBRequest{Query: q}); resp.Error != "" || !changed {
			t.Fatalf("%s: %+v changed %v", q, resp, changed)
		}
	}
	// A counter sequence of its own is state; the sequence a serial
	// column owns, advanced by a conflicting upsert, is not.
	if resp, changed := db.Do(ctx, wire.DBRequest{Query: `SELECT nextval('issued')`}); resp.Error != "" || !changed {
		t.Errorf("nextval of a counter: %+v changed %v", resp, changed)
	}
	upsertInvoice := wire.DBRequest{Exec: true, Query: `INSERT INTO invoices (order_id) VALUES ($1) ON CONFLICT (order_id) DO NOTHING`, Args: []wire.Value{str("o1")}}
	if resp, changed := db.Do(ctx, upsertInvoice); resp.Error != "" || !changed {
		t.Errorf("first invoice: %+v changed %v", resp, changed)
	}
	if resp, changed := db.Do(ctx, upsertInvoice); resp.Error != "" || changed {
		t.Errorf("a conflicting upsert that only advanced its serial: %+v changed %v", resp, changed)
	}
	// A notification is an effect, however it is sent: NOTIFY, pg_notify
	// with the channel as an argument, a trigger of the setup's that
	// changes no row the statement names.
	for _, req := range []wire.DBRequest{
		{Exec: true, Query: `NOTIFY order_paid, 'o1'`},
		{Query: `SELECT pg_notify($1, $2)`, Args: []wire.Value{str("Order-Paid"), str("o1")}},
		{Exec: true, Query: `INSERT INTO shipments VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id`, Args: []wire.Value{str("s1")}},
		{Exec: true, Query: `INSERT INTO shipments VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id`, Args: []wire.Value{str("s1")}},
	} {
		if resp, changed := db.Do(ctx, req); resp.Error != "" || !changed {
			t.Errorf("%s: %+v changed %v", req.Query, resp, changed)
		}
	}
	resp, changed := db.Do(ctx, wire.DBRequest{Query: `SELECT id, status FROM orders`})
	if resp.Error != "" || changed || len(resp.Rows) != 1 || *resp.Rows[0][1].String != "paid" {
		t.Fatalf("select: %+v", resp)
	}
	for _, hostile := range []string{
		`CREATE ROLE intruder SUPERUSER`,
		`SELECT rolpassword FROM pg_authid`,
		`COPY (SELECT 1) TO PROGRAM 'touch /tmp/flowgen-pwned'`,
		`SELECT pg_read_file('/etc/passwd')`,
		`CREATE TABLE public.planted (x int)`,
		`SET ROLE postgres`,
	} {
		if resp, _ := db.Do(ctx, wire.DBRequest{Exec: true, Query: hostile}); resp.Error == "" {
			t.Errorf("%s: allowed", hostile)
		}
	}
	if err := db.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if resp, _ := db.Do(ctx, wire.DBRequest{Query: `SELECT count(*) FROM orders`}); resp.Error != "" || *resp.Rows[0][0].Int != 0 {
		t.Fatalf("after reset: %+v", resp)
	}
	name := db.name
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("postgres", pgtest.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow(`SELECT (SELECT count(*) FROM pg_roles WHERE rolname = $1) + (SELECT count(*) FROM pg_namespace WHERE nspname = $1)`, name).Scan(&n); err != nil || n != 0 {
		t.Fatalf("left behind %d of role and schema %s (%v)", n, name, err)
	}
}

// TestReadOnlyFixtureDB: a db.read connector's statements run read-only.
func TestReadOnlyFixtureDB(t *testing.T) {
	ctx := context.Background()
	db, err := OpenFixtureDB(ctx, pgtest.DatabaseURL(), `CREATE TABLE prices (sku text PRIMARY KEY, cents int); INSERT INTO prices VALUES ('a', 1)`, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if resp, _ := db.Do(ctx, wire.DBRequest{Query: `SELECT cents FROM prices WHERE sku = $1`, Args: []wire.Value{str("a")}}); resp.Error != "" || *resp.Rows[0][0].Int != 1 {
		t.Fatalf("read: %+v", resp)
	}
	for _, q := range []string{`UPDATE prices SET cents = 2`, `DELETE FROM prices RETURNING sku`} {
		resp, changed := db.Do(ctx, wire.DBRequest{Query: q})
		if !strings.Contains(resp.Error, "read-only transaction") || changed {
			t.Errorf("%s: %+v changed %v", q, resp, changed)
		}
	}
}
