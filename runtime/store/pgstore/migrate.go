package pgstore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	byVersion := map[int]*Migration{}
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a version number", name)
		}
		body, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		m := byVersion[v]
		if m == nil {
			m = &Migration{Version: v}
			byVersion[v] = m
		}
		switch {
		case strings.HasSuffix(rest, ".up.sql"):
			m.Name, m.Up = strings.TrimSuffix(rest, ".up.sql"), string(body)
		case strings.HasSuffix(rest, ".down.sql"):
			m.Down = string(body)
		default:
			return nil, fmt.Errorf("migration %s: want .up.sql or .down.sql", name)
		}
	}
	out := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.Up == "" || m.Down == "" {
			return nil, fmt.Errorf("migration %d needs both an up and a down file", m.Version)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// migrationLock is the advisory lock key that serialises migrations, so
// several processes may run them at once safely.
const migrationLock = 0x666c6f7767656e // "flowgen"

// withLock runs fn on one connection holding the migration lock.
func withLock(ctx context.Context, db *sql.DB, fn func(*sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, migrationLock); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, migrationLock)
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS flowgen_schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migration table: %w", err)
	}
	return fn(conn)
}

func applied(ctx context.Context, conn *sql.Conn) (map[int]bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version FROM flowgen_schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out[v] = true
	}
	return out, rows.Err()
}

// MigrateUp applies every pending migration, each in its own transaction,
// and returns the versions it applied.
func MigrateUp(ctx context.Context, db *sql.DB) ([]int, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	var done []int
	err = withLock(ctx, db, func(conn *sql.Conn) error {
		have, err := applied(ctx, conn)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if have[m.Version] {
				continue
			}
			if err := runMigration(ctx, conn, m.Up, `INSERT INTO flowgen_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %d (%s) up: %w", m.Version, m.Name, err)
			}
			done = append(done, m.Version)
		}
		return nil
	})
	return done, err
}

// MigrateDown reverts the newest applied migration and returns its
// version, or 0 when none is applied.
func MigrateDown(ctx context.Context, db *sql.DB) (int, error) {
	ms, err := Migrations()
	if err != nil {
		return 0, err
	}
	reverted := 0
	err = withLock(ctx, db, func(conn *sql.Conn) error {
		have, err := applied(ctx, conn)
		if err != nil {
			return err
		}
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if !have[m.Version] {
				continue
			}
			if err := runMigration(ctx, conn, m.Down, `DELETE FROM flowgen_schema_migrations WHERE version = $1 AND $2 = $2`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %d (%s) down: %w", m.Version, m.Name, err)
			}
			reverted = m.Version
			return nil
		}
		return nil
	})
	return reverted, err
}

// MigrationStatus reports each embedded migration and whether it is applied.
func MigrationStatus(ctx context.Context, db *sql.DB) ([]Migration, map[int]bool, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, nil, err
	}
	var have map[int]bool
	err = withLock(ctx, db, func(conn *sql.Conn) error {
		have, err = applied(ctx, conn)
		return err
	})
	return ms, have, err
}

func runMigration(ctx context.Context, conn *sql.Conn, body, record string, args ...any) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, record, args...); err != nil {
		return err
	}
	return tx.Commit()
}
