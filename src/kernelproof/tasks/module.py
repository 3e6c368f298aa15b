"""Executing task and candidate sources as modules, inside a worker process only."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path


def module_from_source(source: str, path: str | Path, name: str) -> types.ModuleType:
    """Execute ``source`` as a fresh module named ``name`` whose ``__file__`` is ``path``.

    Registered in ``sys.modules`` so that classes defined in it behave like imported ones
    (pickling, ``inspect``, Triton's source lookup).
    """
    module = types.ModuleType(name)
    module.__file__ = str(path)
    sys.modules[name] = module
    code = compile(source, str(path), "exec")
    exec(code, module.__dict__)
    return module


def import_file(path: str | Path, name: str) -> types.ModuleType:
    """Import a file as a module the ordinary way (so ``inspect.getsource`` works on it)."""
    path = Path(path).resolve()
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    directory = str(path.parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec.loader.exec_module(module)
    return module
