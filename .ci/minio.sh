#!/usr/bin/env bash
# Builds (once per version, cached outside the repository) and starts the
# S3-compatible test server on 127.0.0.1:9000, idempotently. The tests'
# defaults (runtime/s3blobs/s3test) match the credentials below.
set -euo pipefail

MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c # the only version the module proxy serves
cache="${XDG_CACHE_HOME:-$HOME/.cache}/flowgen/minio-$MINIO_VERSION"
address=127.0.0.1:9000

if curl -sf "http://$address/minio/health/live" >/dev/null 2>&1; then
  echo "MinIO already running on $address"
  exit 0
fi
if [ ! -x "$cache/minio" ]; then
  echo "building MinIO $MINIO_VERSION into $cache (about 5 minutes, once)"
  mkdir -p "$cache"
  GOBIN="$cache" GOFLAGS= go install "github.com/minio/minio@$MINIO_VERSION"
fi
data="${TMPDIR:-/tmp}/flowgen-minio-data"
mkdir -p "$data"
MINIO_ROOT_USER=flowgen MINIO_ROOT_PASSWORD=flowgen-test-secret MINIO_BROWSER=off \
  nohup "$cache/minio" server --quiet --address "$address" "$data" >"${TMPDIR:-/tmp}/flowgen-minio.log" 2>&1 &
for _ in $(seq 1 60); do
  if curl -sf "http://$address/minio/health/live" >/dev/null 2>&1; then
    echo "MinIO started on $address"
    exit 0
  fi
  sleep 1
done
echo "MinIO did not start; see ${TMPDIR:-/tmp}/flowgen-minio.log" >&2
exit 1
