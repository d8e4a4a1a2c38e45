package meta

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lib/pq"

	"github.com/flowgen-dev/flowgen/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the registry's schema; its advisory lock key spells
// "registry".
var Migrations = pgmigrate.Set{Files: migrationFiles, Table: "registry_schema_migrations", Lock: 0x7265676973747279}

// Postgres is the metadata store on PostgreSQL, shared by any number of
// registry processes.
type Postgres struct {
	db *sql.DB
}

// OpenPostgres connects to url and applies pending migrations (safe when
// several processes start at once).
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	db, err := sql.Open("postgres", url)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	// Keep connections for concurrent requests instead of reconnecting
	// (the default idle pool of 2 reconnects under load).
	db.SetMaxOpenConns(32)
	db.SetMaxIdleConns(32)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if _, err := Migrations.Up(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("meta: migrate: %w", err)
	}
	return &Postgres{db: db}, nil
}

// Close closes the connection pool.
func (p *Postgres) Close() error { return p.db.Close() }

// CreateVersion implements Store.
func (p *Postgres) CreateVersion(ctx context.Context, v Version, audit ...Event) (Version, bool, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return Version{}, false, err
	}
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return Version{}, false, fmt.Errorf("meta: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO registry_versions (namespace, connector, version, digest, state, doc)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, v.Namespace, v.Connector, v.Version, v.Digest, v.State, doc)
	if err != nil {
		return Version{}, false, fmt.Errorf("meta: create %s: %w", v.Key(), err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		for _, e := range audit {
			if err := insertAudit(ctx, tx, e); err != nil {
				return Version{}, false, err
			}
		}
		if err := tx.Commit(); err != nil {
			return Version{}, false, fmt.Errorf("meta: create %s: %w", v.Key(), err)
		}
		return v, true, nil
	}
	tx.Rollback()
	stored, err := p.GetVersion(ctx, v.Key())
	if err != nil {
		return Version{}, false, err
	}
	if stored.Digest != v.Digest {
		return stored, false, &ConflictError{Key: v.Key(), Stored: stored.Digest, Offered: v.Digest}
	}
	return stored, false, nil
}

// GetVersion implements Store.
func (p *Postgres) GetVersion(ctx context.Context, k Key) (Version, error) {
	return p.getVersion(ctx, p.db, k, "")
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (p *Postgres) getVersion(ctx context.Context, q querier, k Key, suffix string) (Version, error) {
	var doc []byte
	err := q.QueryRowContext(ctx, `SELECT doc FROM registry_versions WHERE namespace = $1 AND connector = $2 AND version = $3`+suffix,
		k.Namespace, k.Connector, k.Version).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return Version{}, fmt.Errorf("%w: %s", ErrNotFound, k)
	}
	if err != nil {
		return Version{}, fmt.Errorf("meta: get %s: %w", k, err)
	}
	var v Version
	return v, json.Unmarshal(doc, &v)
}

// UpdateVersion implements Store.
func (p *Postgres) UpdateVersion(ctx context.Context, k Key, fn func(*Version) error, audit ...Event) (Version, error) {
	var v Version
	err := p.audited(ctx, "update "+k.String(), audit, func(tx *sql.Tx) error {
		var err error
		if v, err = p.getVersion(ctx, tx, k, " FOR UPDATE"); err != nil {
			return err
		}
		before := v
		if err := fn(&v); err != nil {
			return err
		}
		if err := checkUpdate(before, v); err != nil {
			return err
		}
		doc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE registry_versions SET state = $4, doc = $5 WHERE namespace = $1 AND connector = $2 AND version = $3`,
			k.Namespace, k.Connector, k.Version, v.State, doc); err != nil {
			return fmt.Errorf("meta: update %s: %w", k, err)
		}
		return nil
	})
	if err != nil {
		return Version{}, err
	}
	return v, nil
}

// ListVersions implements Store.
func (p *Postgres) ListVersions(ctx context.Context, namespace, connector string) ([]Version, error) {
	return p.versions(ctx, `WHERE namespace = $1 AND connector = $2`, []any{namespace, connector}, func(Version) bool { return true })
}

// Search implements Store. Namespace and state narrow the scan in SQL; the
// rest of the query is applied to the rows, the same way as in Bolt.
func (p *Postgres) Search(ctx context.Context, q Query) ([]Version, error) {
	states := q.States
	if len(states) == 0 {
		states = []State{Certified}
	}
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return p.versions(ctx, `WHERE ($1 = '' OR namespace = $1) AND state = ANY($2)`, []any{q.Namespace, pq.Array(names)}, q.Matches)
}

func (p *Postgres) versions(ctx context.Context, where string, args []any, keep func(Version) bool) ([]Version, error) {
	all, err := queryDocs[Version](ctx, p.db, `SELECT doc FROM registry_versions `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("meta: list: %w", err)
	}
	out := slices.DeleteFunc(all, func(v Version) bool { return !keep(v) })
	sortVersions(out)
	return out, nil
}

// queryDocs runs a query whose one column is a JSON document and decodes
// each row into a T.
func queryDocs[T any](ctx context.Context, db *sql.DB, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return nil, err
		}
		var v T
		if err := json.Unmarshal(doc, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// CreateToken implements Store.
func (p *Postgres) CreateToken(ctx context.Context, t Token, audit ...Event) error {
	doc, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return p.audited(ctx, "token "+t.ID, audit, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO registry_tokens (id, hash, doc) VALUES ($1, $2, $3)`, t.ID, t.Hash, doc); err != nil {
			return fmt.Errorf("meta: token %s: %w", t.ID, err)
		}
		return nil
	})
}

// TokenByHash implements Store.
func (p *Postgres) TokenByHash(ctx context.Context, hash string) (Token, error) {
	var doc []byte
	err := p.db.QueryRowContext(ctx, `SELECT doc FROM registry_tokens WHERE hash = $1`, hash).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, fmt.Errorf("%w: token", ErrNotFound)
	}
	if err != nil {
		return Token{}, fmt.Errorf("meta: token: %w", err)
	}
	var t Token
	return t, json.Unmarshal(doc, &t)
}

// RevokeToken implements Store.
func (p *Postgres) RevokeToken(ctx context.Context, id string, at time.Time, audit ...Event) error {
	stamp, _ := json.Marshal(at)
	return p.audited(ctx, "revoke "+id, audit, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE registry_tokens
		SET doc = CASE WHEN doc->>'revoked' IS NULL THEN jsonb_set(doc, '{revoked}', $2::jsonb) ELSE doc END
		WHERE id = $1`, id, string(stamp))
		if err != nil {
			return fmt.Errorf("meta: revoke %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: token %s", ErrNotFound, id)
		}
		return nil
	})
}

// ListTokens implements Store.
func (p *Postgres) ListTokens(ctx context.Context) ([]Token, error) {
	out, err := queryDocs[Token](ctx, p.db, `SELECT doc FROM registry_tokens`)
	if err != nil {
		return nil, fmt.Errorf("meta: tokens: %w", err)
	}
	sortTokens(out)
	return out, nil
}

// AppendAudit implements Store.
func (p *Postgres) AppendAudit(ctx context.Context, e Event) error {
	return p.audited(ctx, "audit", []Event{e}, func(*sql.Tx) error { return nil })
}

// audited runs change in a transaction, appends the audit events that
// record it last, and commits; what names the change in errors.
func (p *Postgres) audited(ctx context.Context, what string, audit []Event, change func(*sql.Tx) error) error {
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("meta: %s: %w", what, err)
	}
	defer tx.Rollback()
	if err := change(tx); err != nil {
		return err
	}
	for _, e := range audit {
		if err := insertAudit(ctx, tx, e); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("meta: %s: %w", what, err)
	}
	return nil
}

// insertAudit appends e to the audit log in tx, the transaction of the
// change it records. It first locks the log against other appends until
// tx ends (readers go on), so events commit in the order of their
// sequence numbers: a reader that has seen one has seen every event
// before it, and the webhook sender's cursor never passes an event that
// commits later. The lock is the last a transaction takes, so it is in no
// cycle.
func insertAudit(ctx context.Context, tx *sql.Tx, e Event) error {
	doc, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `LOCK TABLE registry_audit IN EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("meta: audit: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO registry_audit (at, doc) VALUES ($1, $2)`, e.Time, doc); err != nil {
		return fmt.Errorf("meta: audit: %w", err)
	}
	return nil
}

// Audit implements Store.
func (p *Postgres) Audit(ctx context.Context, limit int) ([]Event, error) {
	out, err := queryDocs[Event](ctx, p.db, `SELECT doc || jsonb_build_object('seq', seq) FROM registry_audit ORDER BY seq DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("meta: audit: %w", err)
	}
	return out, nil
}

// AuditAfter implements Store.
func (p *Postgres) AuditAfter(ctx context.Context, seq int64, limit int) ([]Event, error) {
	out, err := queryDocs[Event](ctx, p.db, `SELECT doc || jsonb_build_object('seq', seq) FROM registry_audit WHERE seq > $1 ORDER BY seq LIMIT $2`, seq, limit)
	if err != nil {
		return nil, fmt.Errorf("meta: audit: %w", err)
	}
	return out, nil
}

// Cursor implements Store.
func (p *Postgres) Cursor(ctx context.Context, name string) (int64, error) {
	var seq int64
	err := p.db.QueryRowContext(ctx, `SELECT seq FROM registry_cursors WHERE name = $1`, name).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("meta: cursor: %w", err)
	}
	return seq, nil
}

// SetCursor implements Store.
func (p *Postgres) SetCursor(ctx context.Context, name string, seq int64) error {
	if _, err := p.db.ExecContext(ctx, `INSERT INTO registry_cursors (name, seq) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq`, name, seq); err != nil {
		return fmt.Errorf("meta: cursor: %w", err)
	}
	return nil
}

// DB is the underlying pool, for migrations and health checks.
func (p *Postgres) DB() *sql.DB { return p.db }
