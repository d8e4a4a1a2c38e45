#!/usr/bin/env bash
# Builds stock cosign (once per version, cached outside the repository) for
# the test that checks our signatures with it (signing.TestStockCosignVerifies).
set -euo pipefail

COSIGN_VERSION=v2.6.5 # keep in step with testutil.CosignVersion
cache="${XDG_CACHE_HOME:-$HOME/.cache}/flowgen/cosign-$COSIGN_VERSION"
if [ -x "$cache/cosign" ]; then
  echo "cosign $COSIGN_VERSION cached in $cache"
  exit 0
fi
echo "building cosign $COSIGN_VERSION into $cache (about 6 minutes, once)"
mkdir -p "$cache"
GOBIN="$cache" GOFLAGS= go install "github.com/sigstore/cosign/v2/cmd/cosign@$COSIGN_VERSION"
