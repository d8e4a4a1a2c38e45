#!/usr/bin/env bash
# Certification time of the charge and normalize examples, now and at the
# commit before the certification world of issue 36 (a world drawn per run,
# inputs generated from the schemas, every attempt, lost answers, a live
# provider, activations that settle), in one run, with the ratio; and how
# many generated inputs and deliveries the run made. The budget is 2x.
# Usage: bench/certify.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
baseline=242ae11 # main before the certification world
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --detach "$work/before" "$baseline" >/dev/null 2>&1
(cd "$work/before" && go build -o "$work/flowgen-before" ./cmd/flowgen)
go build -o "$work/flowgen-after" ./cmd/flowgen

# median of "runs" warm runs, in seconds; one discarded run warms caches.
median() {
  local bin=$1 dir=$2 t=()
  "$bin" certify --out "$work/out" "$dir" >/dev/null 2>&1 || true
  for _ in $(seq "$runs"); do
    local s e
    s=$(date +%s.%N)
    "$bin" certify --out "$work/out" "$dir" >/dev/null 2>&1 || { echo "certify $dir failed with $bin" >&2; exit 1; }
    e=$(date +%s.%N)
    t+=("$(echo "$e - $s" | bc)")
  done
  printf '%s\n' "${t[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

for c in charge normalize; do
  before=$(cd "$work/before" && median "$work/flowgen-before" "examples/connectors/$c")
  after=$(median "$work/flowgen-after" "examples/connectors/$c")
  # What the last run did, from its report: deliveries, inputs, generated.
  did=$(sed -n 's/.*"summary": "\([0-9]* deliveries of [0-9]* inputs, [0-9]* generated from the schemas\).*/\1/p' "$work/out/report.json" | head -1)
  awk -v c="$c" -v b="$before" -v a="$after" -v d="${did:-no duplicate deliveries (not Effectful)}" 'BEGIN { printf "BenchmarkCertify/%s: before %.2f s, after %.2f s (drawn world, generated inputs, every attempt, lost answers), ratio %.2f (budget 2); %s\n", c, b, a, a / b, d }'
done
