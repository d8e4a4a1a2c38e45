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
		{Query: `SELECT pg_notify('ship_' || md5($1), 'x')`, Args: []wire.Value{str("o1")}},
		{Exec: true, Query: `DO $$ BEGIN EXECUTE format('NOTIFY %I', 'ch_' || md5(random()::text)); END $$`},
		{Exec: true, Query: `INSERT INTO shipments VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id`, Args: []wire.Value{str("s1")}},
		{Exec: true, Query: `INSERT INTO shipments VALUES ($1) ON CONFLICT (id) DO UPDATE SET id = EXCLUDED.id`, Args: []wire.Value{str("s1")}},
	} {
		if resp, changed := db.Do(ctx, req); resp.Error != "" || !changed {
			t.Errorf("%s: %+v changed %v", req.Query, resp, changed)
		}
	}
	// A column named like the command is not a notification.
	notifyColumn := wire.DBRequest{Exec: true, Query: `UPDATE orders SET status = $1 WHERE id = 'o1' AND status <> 'notify_sent'`, Args: []wire.Value{str("paid")}}
	if resp, changed := db.Do(ctx, notifyColumn); resp.Error != "" || changed {
		t.Errorf("%s: %+v changed %v", notifyColumn.Query, resp, changed)
	}
	// A statement that notifies only when it inserts, on a channel it
	// names, is heard; only its runs that notify are effects.
	shipOnce := wire.DBRequest{Query: `WITH ins AS (INSERT INTO shipments VALUES ($1) ON CONFLICT DO NOTHING RETURNING id) SELECT pg_notify('shipped_once', id) FROM ins`, Args: []wire.Value{str("s2")}}
	for i, want := range []bool{true, false} {
		if resp, changed := db.Do(ctx, shipOnce); resp.Error != "" || changed != want {
			t.Errorf("run %d of %s: %+v changed %v, want %v", i+1, shipOnce.Query, resp, changed, want)
		}
	}
	for q, want := range map[string]bool{
		`SELECT pg_notify('ship_' || md5($1), 'x')`:                                               true,
		`select pg_catalog.pg_notify(lower($1), '')`:                                              true,
		`DO $$ BEGIN EXECUTE 'NOTIFY ' || quote_ident('x'); END $$`:                               true,
		`DO $$ BEGIN EXECUTE 'NOT' || 'IFY x'; END $$`:                                            true,
		"SELECT pg_notify/**/('ship_' || $1, 'x')":                                                true,
		"SELECT pg_notify -- c\n ('ship_' || $1, 'x')":                                            true,
		`SELECT U&"pg\005fnotify"('a' || $1, 'b')`:                                                true,
		`CREATE FUNCTION f(q text) RETURNS void LANGUAGE plpgsql AS $f$ BEGIN EXECUTE q; END $f$`: true,
		`NOTIFY x`:                        false,
		`SELECT pg_notify($1::text, 'b')`: false,
		`UPDATE t SET status = 'notify' WHERE id = $1`:                           false,
		`INSERT INTO t VALUES ($1) ON CONFLICT (id) DO UPDATE SET v = 'execute'`: false,
		`SELECT "pg_notify"($1, 'b')`:                                            false,
		`SELECT pg_notify('it''s', 'b'), pg_notify($2, 'c')`:                     false,
		`UPDATE t SET notify_email = $1`:                                         false,
		`INSERT INTO t (notify) VALUES (true)`:                                   false,
	} {
		if got := notifiesUnheard(q); got != want {
			t.Errorf("notifiesUnheard(%q) = %v, want %v", q, got, want)
		}
	}
	// A rule made at run time is state, and what it notifies is heard on
	// the channel its definition names.
	rule := wire.DBRequest{Exec: true, Query: `CREATE OR REPLACE RULE hidden AS ON UPDATE TO orders DO ALSO NOTIFY hidden_chan`}
	if resp, changed := db.Do(ctx, rule); resp.Error != "" || !changed {
		t.Errorf("%s: %+v changed %v", rule.Query, resp, changed)
	}
	same := wire.DBRequest{Exec: true, Query: `UPDATE orders SET status = status`}
	if resp, changed := db.Do(ctx, same); resp.Error != "" || !changed {
		t.Errorf("an update that changes no row but fires a rule that notifies: %+v changed %v", resp, changed)
	}
	if resp, _ := db.Do(ctx, wire.DBRequest{Exec: true, Query: `DROP RULE hidden ON orders`}); resp.Error != "" {
		t.Fatal(resp.Error)
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
