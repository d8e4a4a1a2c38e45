#!/usr/bin/env bash
# Installs a Debian package if its command is missing:
#   .ci/debian-package.sh PACKAGE COMMAND
set -euo pipefail
package=$1 command=$2
if ! command -v "$command" >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "$package is not installed: sudo apt-get install $package" >&2
    exit 1
  fi
  apt-get install -y -qq "$package" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$package"; }
fi
