#!/usr/bin/env bash
# Set up (when needed) and run the whole test suite; `--fast` runs the tier without the `slow`
# marker. Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$KP_ROOT/scripts/bootstrap.sh"
cd "$KP_ROOT"
"$KP_ROOT/scripts/install_chromium.sh"  # the HTML packet's browser tests need chromium
"$KP_ROOT/scripts/install_postgresql.sh"  # the server's tests run a real PostgreSQL
set +e
# The house's static checks (layers, lint, format, types) run first and take seconds; a red one
# fails the run like a failing test, but the tests still run, so one run shows everything.
"$KP_ROOT/scripts/lint.sh"
lint_status=$?
# Two pytest workers by default: verifications spend much of their time waiting on their
# worker processes, so two in flight use the two cores better than one.
# --fast: only the tier without the `slow` marker (no whole verifications, no builds).
args=("$@")
if [ ${#args[@]} -gt 0 ] && [ "${args[0]}" = "--fast" ]; then
  args=(-m "not slow" -n 2 "${args[@]:1}")
elif [ ${#args[@]} -eq 0 ]; then
  args=(-n 2)
fi
# The ten slowest tests close every run: where the CI budget goes, in plain sight.
"$KP_VENV/bin/python" -m pytest --durations=10 "${args[@]}"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests; that is a failure, not a pass" >&2
  exit 1
fi
if [ "$lint_status" -ne 0 ]; then
  echo "test.sh: scripts/lint.sh failed (see above)" >&2
  [ "$status" -eq 0 ] && status=1
fi
exit "$status"
