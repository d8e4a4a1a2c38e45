package pgstore

import (
	"context"
	"database/sql"
	"embed"

	"github.com/flowgen-dev/flowgen/internal/pgmigrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one versioned schema change.
type Migration = pgmigrate.Migration

// migrations is the job store's set; its lock key spells "flowgen".
var migrations = pgmigrate.Set{Files: migrationFiles, Table: "flowgen_schema_migrations", Lock: 0x666c6f7767656e}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) { return migrations.Migrations() }

// MigrateUp applies every pending migration, each in its own transaction,
// and returns the versions it applied. Several processes may run it at once.
func MigrateUp(ctx context.Context, db *sql.DB) ([]int, error) { return migrations.Up(ctx, db) }

// MigrateDown reverts the newest applied migration and returns its
// version, or 0 when none is applied.
func MigrateDown(ctx context.Context, db *sql.DB) (int, error) { return migrations.Down(ctx, db) }

// MigrationStatus reports each embedded migration and whether it is applied.
func MigrationStatus(ctx context.Context, db *sql.DB) ([]Migration, map[int]bool, error) {
	return migrations.Status(ctx, db)
}
