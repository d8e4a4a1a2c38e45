#!/usr/bin/env bash
# Certification time of the charge and normalize examples, now and at the
# commit before certification ran connector code in a sandbox (which ran
# the author's go test in-process), in one run, with the ratio. The budget
# for the sandbox and the recorder is 1.5x. Usage: bench/certify.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
baseline=2c2b5d1 # main before the sandboxed harness
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
  awk -v c="$c" -v b="$before" -v a="$after" 'BEGIN { printf "BenchmarkCertify/%s: before %.2f s, after %.2f s (sandbox and recorder), ratio %.2f (budget 1.5)\n", c, b, a, a / b }'
done
