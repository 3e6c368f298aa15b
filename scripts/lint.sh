#!/usr/bin/env bash
# The house's safety net, with the virtual environment's tools (the `lint` extra, which the `test`
# extra includes; scripts/bootstrap.sh installs it): the layer contract (import-linter), lint and
# format (ruff), types (mypy; strict for the schema, the worker protocol and the settings). Their
# settings are in pyproject.toml. Every step runs, so one run shows every failure; the exit
# status is non-zero when any step failed.
# Usage: scripts/lint.sh
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$KP_ROOT"

tools=(lint-imports ruff mypy)
for tool in "${tools[@]}"; do
  if [ ! -x "$KP_VENV/bin/$tool" ]; then
    echo "lint.sh: $KP_VENV/bin/$tool is missing; install the lint tools with" \
         "scripts/bootstrap.sh (or: $KP_VENV/bin/python -m pip install -e '.[lint]')" >&2
    exit 2
  fi
done

failed=()
# step NAME COMMAND...: run one check, note its name when it fails.
step() {
  local name="$1"
  shift
  echo "== $name"
  if ! "$@"; then
    failed+=("$name")
  fi
}

step "layers (lint-imports)" "$KP_VENV/bin/lint-imports"
step "lint (ruff check)" "$KP_VENV/bin/ruff" check
step "format (ruff format --check)" "$KP_VENV/bin/ruff" format --check --output-format concise
step "types (mypy)" "$KP_VENV/bin/mypy"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'lint.sh: failed: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" >&2
  exit 1
fi
echo "lint.sh: all checks passed"
