#!/usr/bin/env bash
# EXPLAIN ANALYZE of the work-stream claim before and after migration 2, on
# the database the tests use: rows read and buffers touched to claim one
# free message behind 5,000 ready messages of jobs another worker holds
# (the claim now takes a batch of up to 16; there is one to take); then
# before and after migration 5, with 20,000 acknowledged messages and
# 120,000 expired leases kept beside 16 ready messages.
# Usage: bench/claim.sh
set -euo pipefail
cd "$(dirname "$0")/.."
url="${FLOWGEN_TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}"
cd runtime/store/pgstore/migrations
psql "$url" -q -f ../../../../bench/claim-explain.sql 2>&1 | grep -v -e NOTICE -e '^DETAIL' -e '^drop cascades'
