#!/usr/bin/env bash
# Install Debian's chromium when /usr/bin/chromium is missing: the browser tests
# (tests/report/test_browser.py) open the HTML review packet in it, headless.
# Idempotent and quiet: does nothing when chromium is already there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_chromium.sh: no apt-get here; install chromium by hand so that /usr/bin/chromium exists" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "install_chromium.sh: not root and no sudo; run as root: apt-get update && apt-get install -y chromium" >&2
    exit 1
  fi
fi
echo "install_chromium.sh: installing chromium (Debian package) for the browser tests"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >/dev/null
"${sudo[@]}" apt-get install -y -qq chromium >/dev/null
test -x /usr/bin/chromium
