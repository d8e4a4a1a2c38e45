#!/usr/bin/env bash
# Starts PostgreSQL on 127.0.0.1:5432 if it is installed and not running.
set -euo pipefail
echo "== PostgreSQL"
if ! command -v pg_isready >/dev/null; then
  echo "PostgreSQL is not installed: install it (Debian: apt-get install postgresql) and allow trust auth on 127.0.0.1" >&2
  exit 1
fi
if ! pg_isready -h 127.0.0.1 -p 5432 -q; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
pg_isready -h 127.0.0.1 -p 5432
