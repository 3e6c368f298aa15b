"""Proof that lasts: a verdict bound to its environment (``binding``), this machine's side of
the comparison (``probe``), production drift read back from the guard's log
(``drift_summary``) and turned into task shapes (``shape_extension``).

The rule that decides which differences invalidate a verdict is
:mod:`kernelproof.schema.environment_rule`.
"""
