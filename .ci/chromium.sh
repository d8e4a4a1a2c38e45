#!/usr/bin/env bash
# Installs Debian's chromium, the browser the web pages' end-to-end tests
# drive (internal/browsertest, with github.com/chromedp/chromedp), if it is
# missing.
set -euo pipefail
echo "== chromium (the web pages' browser tests)"
"$(dirname "$0")/debian-package.sh" chromium chromium
chromium --version 2>/dev/null
