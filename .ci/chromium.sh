#!/usr/bin/env bash
# Installs Debian's chromium, the browser the web console's end-to-end
# tests drive (github.com/chromedp/chromedp), if it is missing.
set -euo pipefail
echo "== chromium (the web console's browser tests)"
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "chromium is not installed: sudo apt-get install chromium" >&2
    exit 1
  fi
  apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }
fi
chromium --version
