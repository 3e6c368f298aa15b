"""Parsing Python source, one parse at a time in a process.

CPython 3.11's AST constructor keeps its recursion-depth bookkeeping in process-wide state:
two threads parsing at once can fail with ``SystemError: AST constructor recursion depth
mismatch``. ``kernelproof.evaluate`` is called from many threads (reward loops), and every
verification parses the task and the candidate, so every parse goes through one lock.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse``, serialised across threads."""
    with _LOCK:
        return ast.parse(source, filename=filename)
