#!/usr/bin/env bash
# Installs bubblewrap, the certification sandbox, from Debian's packages if
# it is missing.
set -euo pipefail
echo "== bubblewrap (the certification sandbox)"
"$(dirname "$0")/debian-package.sh" bubblewrap bwrap
bwrap --version
