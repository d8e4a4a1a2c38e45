// Package pgmigrate applies versioned, embedded SQL migrations to
// PostgreSQL: NNNN_name.up.sql and NNNN_name.down.sql pairs, each applied in
// its own transaction and recorded in a table of the set's own, under an
// advisory lock so that several processes may migrate at once safely.
package pgmigrate

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Set is one family of migrations: the runtime store's, the registry's.
type Set struct {
	// Files holds the migrations in a directory named migrations.
	Files fs.FS
	// Table records which versions are applied.
	Table string
	// Lock is the advisory lock key that serialises migrating this set.
	Lock int64
}

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// Migrations returns the set's migrations in version order.
func (s Set) Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(s.Files, "migrations")
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
		body, err := fs.ReadFile(s.Files, "migrations/"+name)
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

// withLock runs fn on one connection holding the migration lock.
func (s Set) withLock(ctx context.Context, db *sql.DB, fn func(*sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, s.Lock); err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, s.Lock)
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+s.Table+` (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migration table: %w", err)
	}
	return fn(conn)
}

func (s Set) applied(ctx context.Context, conn *sql.Conn) (map[int]bool, error) {
	rows, err := conn.QueryContext(ctx, `SELECT version FROM `+s.Table)
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

// Up applies every pending migration, each in its own transaction,
// and returns the versions it applied.
func (s Set) Up(ctx context.Context, db *sql.DB) ([]int, error) {
	ms, err := s.Migrations()
	if err != nil {
		return nil, err
	}
	var done []int
	err = s.withLock(ctx, db, func(conn *sql.Conn) error {
		have, err := s.applied(ctx, conn)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if have[m.Version] {
				continue
			}
			if err := runMigration(ctx, conn, m.Up, `INSERT INTO `+s.Table+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %d (%s) up: %w", m.Version, m.Name, err)
			}
			done = append(done, m.Version)
		}
		return nil
	})
	return done, err
}

// Down reverts the newest applied migration and returns its
// version, or 0 when none is applied.
func (s Set) Down(ctx context.Context, db *sql.DB) (int, error) {
	ms, err := s.Migrations()
	if err != nil {
		return 0, err
	}
	reverted := 0
	err = s.withLock(ctx, db, func(conn *sql.Conn) error {
		have, err := s.applied(ctx, conn)
		if err != nil {
			return err
		}
		for i := len(ms) - 1; i >= 0; i-- {
			m := ms[i]
			if !have[m.Version] {
				continue
			}
			if err := runMigration(ctx, conn, m.Down, `DELETE FROM `+s.Table+` WHERE version = $1 AND $2 = $2`, m.Version, m.Name); err != nil {
				return fmt.Errorf("migration %d (%s) down: %w", m.Version, m.Name, err)
			}
			reverted = m.Version
			return nil
		}
		return nil
	})
	return reverted, err
}

// Status reports each migration and whether it is applied.
func (s Set) Status(ctx context.Context, db *sql.DB) ([]Migration, map[int]bool, error) {
	ms, err := s.Migrations()
	if err != nil {
		return nil, nil, err
	}
	var have map[int]bool
	err = s.withLock(ctx, db, func(conn *sql.Conn) error {
		have, err = s.applied(ctx, conn)
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
