#!/usr/bin/env bash
# Installs bubblewrap, the certification sandbox, from Debian's packages if
# it is missing.
set -euo pipefail
echo "== bubblewrap (the certification sandbox)"
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bubblewrap is not installed: sudo apt-get install bubblewrap" >&2
    exit 1
  fi
  apt-get install -y -qq bubblewrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bubblewrap; }
fi
bwrap --version
