"""Static AST scan of an untrusted candidate: supporting evidence, never a verdict.

The scan parses the candidate's source text. It never imports or runs it, and it never imports
torch, so the trusted controller can run it before any worker exists. It reports what the code
*looks like* it does: which kernel languages it uses, which custom kernels it defines, and the
patterns HACKS.md links to reward hacking (fallbacks, side threads, timer patches, caches keyed on
input pointers...).

Pattern matching can always be evaded by a determined author, so every finding here is ``info`` or
``warn``: the run-time probes decide the verdict, this scan points a reviewer at the line to read.
Within that limit the scan sees through the cheap disguises:

- import aliases (``import time as t``, ``from time import perf_counter as pc``);
- renamed references (``pc = time.perf_counter``, ``self.k = ext``, ``e = eval``);
- attribute names built from literals and passed to ``getattr``/``setattr``/``__import__``/
  ``importlib.import_module`` (concatenation, f-strings, ``"".join([...])``, ``.format``,
  ``[::-1]``, module-level string constants);
- module lookups through ``sys.modules[...]``, ``vars(module)[...]``, ``module.__dict__[...]``
  and ``__builtins__[...]``.

Every detector is a small function from the parsed context to findings;
``_DETECTORS`` in ``scan.py`` lists them, one module per family of detectors.
"""

from __future__ import annotations

from kernelproof.checks.static_scan.findings import StaticCheck
from kernelproof.checks.static_scan.rules import LANGUAGES
from kernelproof.checks.static_scan.scan import (
    StaticScan,
    count_lines_of_code,
    scan_source,
)

__all__ = ["LANGUAGES", "StaticCheck", "StaticScan", "count_lines_of_code", "scan_source"]
