#!/usr/bin/env bash
# Installs and starts, idempotently, what the tests need: PostgreSQL on
# 127.0.0.1:5432, bubblewrap (the certification sandbox), MinIO on
# 127.0.0.1:9000, a stock cosign and chromium (the web console's browser
# tests). make test runs it first; make demo
# runs the PostgreSQL and bubblewrap parts.
set -euo pipefail
cd "$(dirname "$0")/.."

.ci/postgres.sh
.ci/bubblewrap.sh
.ci/chromium.sh

echo "== MinIO (S3-compatible test server)"
.ci/minio.sh

echo "== cosign (to check our signatures with the stock tool)"
.ci/cosign.sh
