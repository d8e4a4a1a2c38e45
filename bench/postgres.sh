#!/usr/bin/env bash
# PostgreSQL benchmark on one database: flowgen's durable node executions/s
# (1, 2, 4 worker processes; 3-node linear flow and 1-to-100 fan-out), River
# working no-op jobs (one insert per transaction) and DBOS Transact for Go
# running the same shapes (bench/dbos), interleaved in ROUNDS rounds
# (default 3), each with PostgreSQL's CPU per step (internal/pgcpu); then
# what the step protocol costs per activation on the wire, the median of
# each figure, and the ratio lines last.
# Usage: [ROUNDS=n] bench/postgres.sh
set -euo pipefail
cd "$(dirname "$0")/.."
url="${FLOWGEN_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
rounds="${ROUNDS:-3}"
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT

reset() { psql "$url" -qc "DROP SCHEMA IF EXISTS $1 CASCADE" -c "CREATE SCHEMA $1" >/dev/null 2>&1; }
drop() { psql "$url" -qc "DROP SCHEMA IF EXISTS $1 CASCADE" >/dev/null 2>&1; }

# Each round appends "name value" lines to $runs.
for round in $(seq "$rounds"); do
	echo "round $round of $rounds"
	go test -run='^$' -bench='^BenchmarkPostgres$' -benchtime=1x ./runtime/engine |
		awk '/^BenchmarkPostgres\// { sub(/-[0-9]+$/, "", $1); for (i = 2; i < NF; i++) if ($(i+1) == "nodes/s" || $(i+1) == "pg-cpu-ms/node") print "flowgen-" substr($1, 19) ($(i+1) == "nodes/s" ? "" : "-" $(i+1)), $i }' | tee -a "$runs"
	reset flowgen_river_bench
	(cd bench/river && go run . -database-url "$url&search_path=flowgen_river_bench" -jobs 3000 -workers 16) |
		sed -n 's/.*jobs\/s=\([0-9.]*\).*/river-jobs\/s \1/p' | tee -a "$runs"
	drop flowgen_river_bench
	drop flowgen_dbos_bench
	(cd bench/dbos && go run . -database-url "$url" -schema flowgen_dbos_bench -workflows 1000 2>/dev/null) |
		awk '/^dbos / { for (i = 3; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "steps/s" || kv[1] ~ /ms(\/step)?$/) print "dbos-" $2 "-" kv[1], kv[2] } }' | tee -a "$runs"
	drop flowgen_dbos_bench
done

go test -run='^$' -bench='^BenchmarkPostgresProtocol$' -benchtime=1x ./runtime/engine | grep '^Benchmark'

echo "medians of $rounds rounds:"
medians=$(sort -k1,1 -k2,2g "$runs" | awk '
	$1 != name { if (name != "") print name, med(); name = $1; n = 0 }
	{ v[++n] = $2 }
	END { print name, med() }
	function med() { return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }')
echo "$medians"
value() { awk -v k="$1" '$1 == k { print $2 }' <<<"$medians"; }
awk -v l="$(value flowgen-linear/procs=1)" -v f="$(value flowgen-fanout/procs=1)" \
	-v r="$(value river-jobs/s)" -v d="$(value dbos-linear-direct-steps/s)" -v df="$(value dbos-fanout-steps/s)" \
	-v lc="$(value flowgen-linear/procs=1-pg-cpu-ms/node)" -v dc="$(value dbos-linear-direct-pg-cpu-ms/step)" 'BEGIN {
	printf "ratio PostgreSQL CPU per step, linear 1 process vs DBOS direct: %.2f\n", lc / dc
	printf "ratio linear 1 process vs River: %.2f\n", l / r
	printf "ratio linear 1 process vs DBOS direct: %.2f\n", l / d
	printf "ratio fan-out vs DBOS: %.2f\n", f / df
}'
