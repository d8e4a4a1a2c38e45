#!/usr/bin/env bash
# PostgreSQL benchmark, one run, same database: flowgen's durable node
# executions/s (1, 2, 4 worker processes; 3-node linear flow and 1-to-100
# fan-out), what the step protocol costs per activation on the wire, River
# working no-op jobs (one insert per transaction), and DBOS Transact for Go
# running the same shapes (bench/dbos). The ratio lines come last.
# Usage: bench/postgres.sh
set -euo pipefail
cd "$(dirname "$0")/.."
url="${FLOWGEN_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run='^$' -bench='^BenchmarkPostgres(Protocol)?$' -benchtime=1x ./runtime | tee "$out"

schema() { psql "$url" -qc "DROP SCHEMA IF EXISTS $1 CASCADE" -c "CREATE SCHEMA $1" >/dev/null 2>&1; }
drop() { psql "$url" -qc "DROP SCHEMA $1 CASCADE" >/dev/null 2>&1; }

schema flowgen_river_bench
river=$(cd bench/river && go run . -database-url "$url&search_path=flowgen_river_bench" -jobs 3000 -workers 16)
drop flowgen_river_bench
echo "$river"

drop flowgen_dbos_bench || true
dbos=$(cd bench/dbos && go run . -database-url "$url" -schema flowgen_dbos_bench -workflows 1000 2>/dev/null | grep '^dbos ')
drop flowgen_dbos_bench
echo "$dbos"

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
metric() { awk -v name="$1" -v unit="$2" '$1 ~ name { for (i = 1; i <= NF; i++) if ($(i+1) == unit) print $i }' "$out" | head -1; }
river_jobs=$(field 'jobs\/s' <<<"$river")
dbos_direct=$(grep linear-direct <<<"$dbos" | field 'steps\/s')
dbos_fan=$(grep fanout <<<"$dbos" | field 'steps\/s')
linear1=$(metric '^BenchmarkPostgres/linear/procs=1' nodes/s)
fan1=$(metric '^BenchmarkPostgres/fanout/procs=1' nodes/s)
awk -v l="$linear1" -v f="$fan1" -v r="$river_jobs" -v d="$dbos_direct" -v df="$dbos_fan" 'BEGIN {
	printf "ratio linear 1 process vs River: %.2f\n", l / r
	printf "ratio linear 1 process vs DBOS direct: %.2f\n", l / d
	printf "ratio fan-out vs DBOS: %.2f\n", f / df
}'
