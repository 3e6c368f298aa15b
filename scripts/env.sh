# Sourced by the project's scripts: the virtual environment and the build caches, all inside
# the project (git-ignored), so that compiled extensions are reused across runs and tests.
KP_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export KP_ROOT
export KP_VENV="${KP_VENV:-$KP_ROOT/.venv}"
export TORCH_EXTENSIONS_DIR="${TORCH_EXTENSIONS_DIR:-$KP_ROOT/.cache/torch_extensions}"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$KP_ROOT/.cache/torchinductor}"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$KP_ROOT/.cache/numba}"
export TRITON_CACHE_DIR="${TRITON_CACHE_DIR:-$KP_ROOT/.cache/triton}"
export KERNELPROOF_CACHE_DIR="${KERNELPROOF_CACHE_DIR:-$KP_ROOT/.cache/kernelproof}"
mkdir -p "$TORCH_EXTENSIONS_DIR" "$TORCHINDUCTOR_CACHE_DIR" "$NUMBA_CACHE_DIR" \
         "$TRITON_CACHE_DIR" "$KERNELPROOF_CACHE_DIR"
