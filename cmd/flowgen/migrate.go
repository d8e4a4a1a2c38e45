package main

import (
	"database/sql"
	"fmt"

	"github.com/flowgen-dev/flowgen/runtime/store/pgstore"
)

const migrateUsage = `Usage: flowgen migrate up|down|status [--database-url URL]

Manages the PostgreSQL schema of the job store with the migrations embedded
in flowgen: up applies every pending one, down reverts the newest applied
one, status lists them. Safe to run from several processes at once (an
advisory lock serialises them). The URL defaults to $FLOWGEN_DATABASE_URL.

Exit status: 0 done, 2 usage, connection or migration error.

Flags:
`

func runMigrate(e *env, args []string) int {
	fs := newFlagSet(e, "migrate", migrateUsage)
	url := fs.String("database-url", e.getenv("FLOWGEN_DATABASE_URL"), "PostgreSQL connection URL")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(rest) != 1 || *url == "" {
		fmt.Fprint(e.stderr, "flowgen migrate: name one of up, down, status, and give --database-url\n\n")
		fs.Usage()
		return exitUsage
	}
	db, err := sql.Open("postgres", *url)
	if err != nil {
		fmt.Fprintf(e.stderr, "flowgen migrate: %v\n", err)
		return exitUsage
	}
	defer db.Close()
	switch rest[0] {
	case "up":
		vs, err := pgstore.MigrateUp(e.ctx, db)
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen migrate up: %v\n", err)
			return exitUsage
		}
		if len(vs) == 0 {
			fmt.Fprintln(e.stdout, "schema is up to date")
		}
		for _, v := range vs {
			fmt.Fprintf(e.stdout, "applied %d\n", v)
		}
	case "down":
		v, err := pgstore.MigrateDown(e.ctx, db)
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen migrate down: %v\n", err)
			return exitUsage
		}
		if v == 0 {
			fmt.Fprintln(e.stdout, "no migration is applied")
		} else {
			fmt.Fprintf(e.stdout, "reverted %d\n", v)
		}
	case "status":
		ms, have, err := pgstore.MigrationStatus(e.ctx, db)
		if err != nil {
			fmt.Fprintf(e.stderr, "flowgen migrate status: %v\n", err)
			return exitUsage
		}
		for _, m := range ms {
			state := "pending"
			if have[m.Version] {
				state = "applied"
			}
			fmt.Fprintf(e.stdout, "%04d %-20s %s\n", m.Version, m.Name, state)
		}
	default:
		fmt.Fprintf(e.stderr, "flowgen migrate: unknown action %q (want up, down or status)\n", rest[0])
		return exitUsage
	}
	return exitOK
}
