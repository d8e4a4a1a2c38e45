#!/usr/bin/env bash
# PostgreSQL benchmark: flowgen's durable node executions/s (1, 2, 4 worker
# processes) and River working the same number of no-op jobs on the same
# database, in one run, with the ratio. Usage: bench/postgres.sh
set -euo pipefail
cd "$(dirname "$0")/.."
url="${FLOWGEN_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
out=$(mktemp)
go test -run='^$' -bench='^BenchmarkPostgres' -benchtime=1x ./runtime | tee "$out"
psql "$url" -qc 'DROP SCHEMA IF EXISTS flowgen_river_bench CASCADE' -c 'CREATE SCHEMA flowgen_river_bench' 2>/dev/null
river=$(cd bench/river && go run . -database-url "$url&search_path=flowgen_river_bench" -jobs 3000 -workers 16)
echo "$river"
psql "$url" -qc 'DROP SCHEMA flowgen_river_bench CASCADE' 2>/dev/null
rjobs=$(sed -n 's/.*jobs\/s=\([0-9.]*\).*/\1/p' <<<"$river")
awk -v r="$rjobs" '/^BenchmarkPostgres\/linear/ { for (i = 1; i <= NF; i++) if ($(i+1) == "nodes/s") printf "%s: %.1f nodes/s = %.2f x River (%.1f jobs/s)\n", $1, $i, $i / r, r }' "$out"
rm -f "$out"
