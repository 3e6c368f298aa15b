#!/usr/bin/env bash
# Install Debian's chromium when /usr/bin/chromium is missing: the browser tests
# (tests/report/test_browser.py, tests/serve/test_browser.py) open pages in it, headless.
# Idempotent and quiet: does nothing when chromium is already there.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
what=install_chromium.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
apt_install chromium
test -x /usr/bin/chromium
