#!/usr/bin/env bash
# Installs and starts, idempotently, what the tests need: PostgreSQL on
# 127.0.0.1:5432, bubblewrap (the certification sandbox), MinIO on
# 127.0.0.1:9000 and a stock cosign. make test runs it first; so does a
# fresh machine's make demo for bubblewrap.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== PostgreSQL"
if ! command -v pg_isready >/dev/null; then
  echo "PostgreSQL is not installed: install it (Debian: apt-get install postgresql) and allow trust auth on 127.0.0.1" >&2
  exit 1
fi
if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi

.ci/bubblewrap.sh

echo "== MinIO (S3-compatible test server)"
.ci/minio.sh

echo "== cosign (to check our signatures with the stock tool)"
.ci/cosign.sh
