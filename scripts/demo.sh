#!/usr/bin/env bash
# Set up (when needed) and run the main job on the bundled examples, writing reports.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$KP_ROOT/scripts/bootstrap.sh"
exec "$KP_VENV/bin/python" "$KP_ROOT/scripts/run_examples.py" "$@"
