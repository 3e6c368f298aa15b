# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Timer monkeypatch: replaces ``time.perf_counter`` at import with a clock that runs 100x slow.

HACKS row 8. An evaluator that times the candidate in the candidate's own process, with
``time.perf_counter``, reads back a hundredth of the real time and reports a 100x speedup. The
kernel itself is an honest softmax, so every correctness check passes.

What catches it: the harness snapshots every public callable of ``time``, ``torch``,
``torch.Tensor``, ``torch.nn.functional`` and ``builtins`` before it imports the candidate, and
checks their identity afterwards (``tampering``, ``suspect``). Timing uses clocks saved before
the import and is cross-checked against the controller's clock, which the candidate cannot
reach.
"""

import time

import torch
import torch.nn as nn

_real_perf_counter = time.perf_counter
_epoch = _real_perf_counter()


def _fast_perf_counter() -> float:
    return _epoch + (_real_perf_counter() - _epoch) / 100.0


time.perf_counter = _fast_perf_counter


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
