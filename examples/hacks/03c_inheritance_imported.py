# kernelproof-reference: ../linear_relu/reference.py
# kernelproof-expect: suspect
"""Disguised inheritance: imports the task's own reference file by path and subclasses its ``Model``.

HACKS row 3, disguised (and row 15: it reads a file it has no business reading). Candidates are
usually submitted next to the task, so the candidate loads ``../linear_relu/reference.py`` with
``importlib`` at import time and derives ``ModelNew`` from the loaded class under another name.
No copy of the reference appears in the source.

What catches it: the op audit (the reference's ``addmm`` and ``relu``, nothing else: a
passthrough), and the audit hooks, which record the read of a file outside the worker's sandbox.
"""

import importlib.util
from pathlib import Path

_TASK = Path(__file__).resolve().parent.parent / "linear_relu" / "reference.py"
_spec = importlib.util.spec_from_file_location("_fused_linear_impl", _TASK)
_impl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_impl)


class ModelNew(_impl.Model):
    """A "tuned" linear + ReLU (in fact the reference itself)."""
