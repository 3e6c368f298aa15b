#!/usr/bin/env bash
# Create .venv when missing and install kernelproof into it with what it needs.
#   * A torch that already works is kept: in .venv, or the system's (the venv then sees it).
#   * Otherwise torch==2.13.0 is pinned: the CPU wheel on this kind of machine. An unpinned
#     torch would pull a multi-GB CUDA build.
# Usage: scripts/bootstrap.sh [extras]   (extras default: kernels,test,serve)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
extras="${1:-kernels,test,serve}"
python="${PYTHON:-python3}"

if [ ! -x "$KP_VENV/bin/python" ]; then
  if "$python" -c "import torch" 2>/dev/null; then
    echo "bootstrap: creating $KP_VENV (reusing the system's torch $("$python" -c 'import torch; print(torch.__version__)'))"
    "$python" -m venv --system-site-packages "$KP_VENV"
  else
    echo "bootstrap: creating $KP_VENV"
    "$python" -m venv "$KP_VENV"
  fi
fi
pip=("$KP_VENV/bin/python" -m pip --disable-pip-version-check -q)
if ! "$KP_VENV/bin/python" -c "import torch" 2>/dev/null; then
  echo "bootstrap: installing torch==2.13.0 (CPU)"
  "${pip[@]}" install "torch==2.13.0"
fi
stamp="$KP_VENV/.kernelproof-installed"
if [ ! -f "$stamp" ] || [ "$KP_ROOT/pyproject.toml" -nt "$stamp" ] || [ "$(cat "$stamp")" != "$extras" ]; then
  echo "bootstrap: installing kernelproof[$extras]"
  "${pip[@]}" install -e "$KP_ROOT[$extras]"
  "$KP_VENV/bin/python" -c "import kernelproof, torch, numpy" # fail loudly if the install did not take
  echo "$extras" > "$stamp"
fi
# TRL's own GRPOTrainer source, unpacked by tests/rl/test_trainers.py to call kernelproof's
# reward exactly as the trainer does: the wheel only (no install; TRL's dependencies are
# transformers, datasets and accelerate, far too heavy for the test set).
trainers="$KP_ROOT/.cache/trainers"
if [ ! -f "$trainers/trl-1.16.0-py3-none-any.whl" ]; then
  mkdir -p "$trainers"
  "${pip[@]}" download --no-deps "trl==1.16.0" -d "$trainers"
fi
