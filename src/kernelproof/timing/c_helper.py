"""Small C helpers the timing path needs and Python cannot express, compiled once per machine.

A helper is a few lines of C (a cache-line flush, a gather with streaming stores) built with
the system's C compiler (``cc``, about 0.2 s) into the kernelproof cache and loaded with
ctypes. The file is named by a digest of its source and pinned when built: it is loaded only if
it is the file the controller built, since a stand-in (one that evicts nothing, say) would
change every later candidate's measurement. Where no compiler or no supported architecture is
available, :func:`load_c_helper` returns None and the caller falls back to plain torch.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from kernelproof.config import cache_dir
from kernelproof.pins import pin, trusted_bytes

#: Machines whose helpers are written (x86-64 and 64-bit ARM).
SUPPORTED_MACHINES = ("x86_64", "amd64", "aarch64", "arm64")


def load_c_helper(name: str, source: str) -> ctypes.CDLL | None:
    """The helper ``name`` built from ``source``, built on first use and cached; None where it
    cannot be built or loaded."""
    if platform.machine().lower() not in SUPPORTED_MACHINES:
        return None
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    target = cache_dir() / f"{name}-{platform.machine()}-{digest}.so"
    if trusted_bytes(target) is None and not _build(name, source, target):
        return None
    try:
        return ctypes.CDLL(str(target))
    except OSError:
        return None


def _build(name: str, code: str, target: Path) -> bool:
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"kernelproof-{name}-") as scratch:
            source = Path(scratch) / f"{name}.c"
            source.write_text(code)
            built = Path(scratch) / f"{name}.so"
            result = subprocess.run(
                [compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(source)],
                capture_output=True,
                timeout=60,
            )
            if result.returncode != 0:
                return False
            # Renamed into place: two workers building at once never load a half-written file.
            partial = target.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(built, partial)
            os.replace(partial, target)
            pin(target)
        return True
    except (OSError, subprocess.SubprocessError):
        return False
