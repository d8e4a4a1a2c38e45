package recorder

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lib/pq"

	"github.com/flowgen-dev/flowgen/certify/wire"
)

// FixtureDB is the database a db connector's statements run on during
// certification: a schema of its own owned by a role of its own, created
// for one world and dropped with it. The connector's SQL is untrusted, so
// it runs as that role: no superuser, no role or database creation, a
// statement timeout, and a search path of its own schema. Point it at a
// database that holds nothing else.
type FixtureDB struct {
	admin    *sql.DB
	conn     *sql.DB
	name     string // role and schema
	setup    string
	readOnly bool
	digest   string
	// definitions are the bodies of the functions, rules and triggers
	// the role owns (the setup's, and any a statement made), read with
	// the digest: words a notification's channel may come from.
	definitions string
	// notified counts the notifications the server delivered to the
	// connector's sessions.
	notified atomic.Int64
}

// OpenFixtureDB makes the role and schema on the server adminURL names (a
// postgres:// URL with a user that may create roles), runs setup in the
// schema as the role, and connects as the role. With readOnly every
// statement runs in a READ ONLY transaction.
func OpenFixtureDB(ctx context.Context, adminURL, setup string, readOnly bool) (*FixtureDB, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("fixture database: want a postgres:// URL, got %q", adminURL)
	}
	admin, err := sql.Open("postgres", adminURL)
	if err != nil {
		return nil, fmt.Errorf("fixture database: %w", err)
	}
	admin.SetMaxOpenConns(2)
	name, password := "flowgen_fx_"+randomHex(8), randomHex(16)
	d := &FixtureDB{admin: admin, name: name, setup: setup, readOnly: readOnly}
	stmts := []string{
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION CONNECTION LIMIT 4`, name, password),
		fmt.Sprintf(`ALTER ROLE %s SET statement_timeout = '5s'`, name),
		fmt.Sprintf(`ALTER ROLE %s SET search_path = %s`, name, name),
		fmt.Sprintf(`CREATE SCHEMA %s AUTHORIZATION %s`, name, name),
	}
	for _, s := range stmts {
		if _, err := admin.ExecContext(ctx, s); err != nil {
			d.Close()
			return nil, fmt.Errorf("fixture database: %w", err)
		}
	}
	ru := *u
	ru.User = url.UserPassword(name, password)
	base, err := pq.NewConnector(ru.String())
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("fixture database: %w", err)
	}
	// The server delivers a session's own notifications to it when it
	// listens: that is how a NOTIFY is seen (notifyChannels).
	d.conn = sql.OpenDB(pq.ConnectorWithNotificationHandler(base, func(*pq.Notification) { d.notified.Add(1) }))
	d.conn.SetMaxOpenConns(2)
	if err := d.runSetup(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *FixtureDB) runSetup(ctx context.Context) error {
	if strings.TrimSpace(d.setup) != "" {
		if _, err := d.conn.ExecContext(ctx, d.setup); err != nil {
			return fmt.Errorf("fixtureEnv.database.setup: %w", err)
		}
	}
	var err error
	d.digest, err = d.stateDigest(ctx)
	return err
}

// Reset empties the schema and runs the setup again.
func (d *FixtureDB) Reset(ctx context.Context) error {
	for _, s := range []string{
		fmt.Sprintf(`DROP SCHEMA %s CASCADE`, d.name),
		d.unlinkLargeObjects(),
		fmt.Sprintf(`CREATE SCHEMA %s AUTHORIZATION %s`, d.name, d.name),
	} {
		if _, err := d.admin.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("fixture database: %w", err)
		}
	}
	return d.runSetup(ctx)
}

// Do runs one statement and reports whether it changed the data of the
// schema (any row of any table), which is what counts as an effect.
func (d *FixtureDB) Do(ctx context.Context, req wire.DBRequest) (wire.DBResponse, bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := make([]any, len(req.Args))
	for i, a := range req.Args {
		args[i] = a.Any()
	}
	before := d.notified.Load()
	resp, err := d.do(ctx, req, args)
	if err != nil {
		return wire.DBResponse{Error: err.Error()}, false
	}
	if d.readOnly {
		return resp, false
	}
	digest, err := d.stateDigest(ctx)
	if err != nil {
		return wire.DBResponse{Error: err.Error()}, false
	}
	changed := digest != d.digest || d.notified.Load() != before || notifiesUnheard(req.Query) || notifiesUnheard(d.definitions)
	d.digest = digest
	return resp, changed
}

// A statement that notifies on a channel it names (NOTIFY chan, or
// pg_notify with a literal or a bound argument as its channel) is heard
// by listening on that channel (notifyChannels), so only the runs that
// really notify count. A channel computed by the statement, or by a
// function or rule of the schema, cannot be listened to; such a
// statement counts as an effect on every run.
var (
	sqlComment     = regexp.MustCompile(`(?s)/\*.*?\*/|--[^\n]*`)
	notifyFunc     = regexp.MustCompile(`(?i)pg_notify"?\s*\(`)
	namedChannel   = regexp.MustCompile(`(?i)^\s*('(?:[^']|'')*'|\$\d+)(\s*::\s*[a-z_ ]+)?\s*,`)
	notifyInString = regexp.MustCompile(`(?i)'\s*notify\s+["'%a-z_]`)
	stringLiteral  = regexp.MustCompile(`'(?:[^']|'')*'`)
	dynamicSQL     = regexp.MustCompile(`(?i)\bexecute\b(\s+(function|procedure)\b)?`)
	unicodeIdent   = regexp.MustCompile(`(?i)\bu&"`)
)

// notifiesUnheard reports whether SQL text (a statement, or a function
// or rule body) may notify on a channel it computes: pg_notify whose
// channel is an expression, NOTIFY in a string (run as dynamic SQL),
// dynamic SQL (EXECUTE of a string or a prepared statement), or an
// identifier spelled in Unicode escapes (which could name pg_notify).
// Comments are ignored.
func notifiesUnheard(text string) bool {
	text = sqlComment.ReplaceAllString(text, " ")
	for _, at := range notifyFunc.FindAllStringIndex(text, -1) {
		if !namedChannel.MatchString(text[at[1]:]) {
			return true
		}
	}
	if notifyInString.MatchString(text) || unicodeIdent.MatchString(text) {
		return true
	}
	// EXECUTE runs a string as SQL (plpgsql) or a prepared statement;
	// EXECUTE FUNCTION and EXECUTE PROCEDURE name a trigger's function.
	for _, m := range dynamicSQL.FindAllStringSubmatch(stringLiteral.ReplaceAllString(text, "''"), -1) {
		if m[1] == "" {
			return true
		}
	}
	return false
}

// maxChannels bounds the channels listened to around one statement.
const maxChannels = 512

// channelToken finds what may name a notification channel: a quoted
// identifier, a string literal, or a bare word.
var channelToken = regexp.MustCompile(`"((?:[^"]|"")+)"|'((?:[^']|'')*)'|[A-Za-z_][A-Za-z0-9_$]*`)

// notifyChannels lists the channels a statement may notify: every word,
// quoted identifier and string literal of it and of the fixture setup
// (where a trigger may notify), and its string arguments.
func (d *FixtureDB) notifyChannels(query string, args []any) []string {
	seen := map[string]bool{}
	var out []string
	add := func(c string) {
		if c != "" && len(c) < 64 && !seen[c] && len(out) < maxChannels {
			seen[c] = true
			out = append(out, c)
		}
	}
	for _, text := range []string{query, d.setup, d.definitions} {
		for _, m := range channelToken.FindAllStringSubmatch(text, -1) {
			switch {
			case m[1] != "":
				add(strings.ReplaceAll(m[1], `""`, `"`))
			case strings.HasPrefix(m[0], "'"):
				add(strings.ReplaceAll(m[2], "''", "'"))
			default:
				add(strings.ToLower(m[0]))
			}
		}
	}
	for _, a := range args {
		switch v := a.(type) {
		case string:
			add(v)
		case nil:
		default:
			add(fmt.Sprint(v)) // a channel may be a number cast to text
		}
	}
	return out
}

func (d *FixtureDB) do(ctx context.Context, req wire.DBRequest, args []any) (wire.DBResponse, error) {
	conn, err := d.conn.Conn(ctx)
	if err != nil {
		return wire.DBResponse{}, err
	}
	defer conn.Close()
	// What an earlier statement left on the pooled session (settings
	// such as how strings are quoted or the search path, prepared
	// statements, temporary objects) must not change what this one does.
	if _, err := conn.ExecContext(ctx, "DISCARD ALL"); err != nil {
		return wire.DBResponse{}, err
	}
	if !d.readOnly {
		// Listen, before the transaction, on every channel the
		// statement may notify; the server delivers the session's own
		// notifications at commit.
		var listen strings.Builder
		for _, c := range d.notifyChannels(req.Query, args) {
			listen.WriteString("LISTEN " + pq.QuoteIdentifier(c) + ";")
		}
		if listen.Len() > 0 {
			if _, err := conn.ExecContext(ctx, listen.String()); err != nil {
				return wire.DBResponse{}, err
			}
		}
		defer conn.ExecContext(context.WithoutCancel(ctx), "UNLISTEN *")
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: d.readOnly})
	if err != nil {
		return wire.DBResponse{}, err
	}
	defer tx.Rollback()
	var resp wire.DBResponse
	if req.Exec {
		res, err := tx.ExecContext(ctx, req.Query, args...)
		if err != nil {
			return resp, err
		}
		resp.RowsAffected, _ = res.RowsAffected()
	} else {
		rows, err := tx.QueryContext(ctx, req.Query, args...)
		if err != nil {
			return resp, err
		}
		if resp.Columns, err = rows.Columns(); err != nil {
			rows.Close()
			return resp, err
		}
		for rows.Next() {
			vals := make([]any, len(resp.Columns))
			ptrs := make([]any, len(vals))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return resp, err
			}
			row := make([]wire.Value, len(vals))
			for i, v := range vals {
				wv, ok := wire.ValueOf(v)
				if !ok {
					s := fmt.Sprint(v)
					wv = wire.Value{String: &s}
				}
				row[i] = wv
			}
			resp.Rows = append(resp.Rows, row)
			if len(resp.Rows) > 10000 {
				rows.Close()
				return resp, fmt.Errorf("query returned more than 10000 rows")
			}
		}
		if err := rows.Close(); err != nil {
			return resp, err
		}
	}
	if d.readOnly {
		// As the runtime's read capability does: a read-only transaction
		// may still NOTIFY, which only a commit would send.
		return resp, nil
	}
	return resp, tx.Commit()
}

// stateDigest hashes every row of every table in the schema, read as the
// administrator so that the connector's role cannot shape what is read.
func (d *FixtureDB) stateDigest(ctx context.Context) (string, error) {
	rows, err := d.admin.QueryContext(ctx,
		`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY table_name`, d.name)
	if err != nil {
		return "", fmt.Errorf("fixture database: %w", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return "", err
		}
		tables = append(tables, t)
	}
	rows.Close()
	h := sha256.New()
	// Large objects live outside any schema; the role's are state too.
	var objects sql.NullString
	if err := d.admin.QueryRowContext(ctx, `SELECT md5(string_agg(m.oid::text || ':' || coalesce((SELECT md5(string_agg(encode(l.data, 'hex'), '' ORDER BY l.pageno)) FROM pg_largeobject l WHERE l.loid = m.oid), ''), ',' ORDER BY m.oid))
		FROM pg_largeobject_metadata m JOIN pg_roles r ON r.oid = m.lomowner WHERE r.rolname = $1`, d.name).Scan(&objects); err != nil {
		return "", fmt.Errorf("fixture database: %w", err)
	}
	fmt.Fprintf(h, "large objects %s\n", objects.String)
	// A sequence of its own (a counter: invoice numbers issued) is state;
	// one a column owns (serial, identity) advances on every insert
	// attempt, a conflicting upsert's too, and shows in its rows.
	var sequences sql.NullString
	if err := d.admin.QueryRowContext(ctx, `SELECT string_agg(s.sequencename || '=' || coalesce(s.last_value::text, ''), ',' ORDER BY s.sequencename)
		FROM pg_sequences s WHERE s.schemaname = $1 AND NOT EXISTS (
			SELECT 1 FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
			WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
			  AND c.relname = s.sequencename AND c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = s.schemaname))`, d.name).Scan(&sequences); err != nil {
		return "", fmt.Errorf("fixture database: %w", err)
	}
	fmt.Fprintf(h, "sequences %s\n", sequences.String)
	// Functions, rules (views too) and triggers are state: one a
	// statement makes or replaces may act on later statements.
	var defs sql.NullString
	if err := d.admin.QueryRowContext(ctx, `SELECT string_agg(def, E'\n' ORDER BY def) FROM (
			SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') ' || coalesce(p.prosrc, '') AS def
				FROM pg_proc p JOIN pg_roles r ON r.oid = p.proowner WHERE r.rolname = $1
			UNION ALL SELECT pg_get_ruledef(w.oid)
				FROM pg_rewrite w JOIN pg_class c ON c.oid = w.ev_class JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = $1
			UNION ALL SELECT pg_get_triggerdef(t.oid)
				FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_roles r ON r.oid = c.relowner WHERE r.rolname = $1 AND NOT t.tgisinternal
		) d`, d.name).Scan(&defs); err != nil {
		return "", fmt.Errorf("fixture database: %w", err)
	}
	d.definitions = defs.String
	fmt.Fprintf(h, "definitions %s\n", defs.String)
	for _, t := range tables {
		var sum sql.NullString
		q := fmt.Sprintf(`SELECT md5(string_agg(t::text, E'\n' ORDER BY t::text)) FROM %s.%s t`, d.name, quoteIdent(t))
		if err := d.admin.QueryRowContext(ctx, q).Scan(&sum); err != nil {
			return "", fmt.Errorf("fixture database: %w", err)
		}
		fmt.Fprintf(h, "%s %s\n", t, sum.String)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Close drops the schema and the role.
// unlinkLargeObjects is the statement that removes the role's large
// objects, which dropping its schema leaves.
func (d *FixtureDB) unlinkLargeObjects() string {
	return fmt.Sprintf(`SELECT lo_unlink(m.oid) FROM pg_largeobject_metadata m JOIN pg_roles r ON r.oid = m.lomowner WHERE r.rolname = '%s'`, d.name)
}

func (d *FixtureDB) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if d.conn != nil {
		d.conn.Close()
	}
	var firstErr error
	for _, s := range []string{
		fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '%s'`, d.name),
		fmt.Sprintf(`DROP SCHEMA IF EXISTS %s CASCADE`, d.name),
		d.unlinkLargeObjects(),
		fmt.Sprintf(`DROP ROLE IF EXISTS %s`, d.name),
	} {
		if _, err := d.admin.ExecContext(ctx, s); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	d.admin.Close()
	return firstErr
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
