# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Geometric-mean underflow: one shape is "solved" in no time and drags a suite score to zero.

HACKS row 26; exercised by the timing tests and the suite scorer, not by the CPU correctness
suite. For rows of length 1 the softmax is identically 1, so the candidate returns a cached
tensor of ones for that shape without reading its input (a legitimate answer), and a normal
softmax elsewhere. Timed at a microsecond or two against the reference's tens, that one shape
has a speedup large enough that a suite's geometric mean of speedups is dominated by it; with a
timer that rounds to zero it becomes infinite.

What catches it: nothing is wrong with the answers (verdict ``verified``). The scorer applies a
per-shape floor: no time below the speed-of-light floor (here, writing the output once) enters a
score, and per-shape speedups are reported next to the aggregate so a reviewer sees where the
number comes from.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ones: dict = {}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] == 1 and bool(torch.isfinite(x).all()):
            key = (tuple(x.shape), x.dtype, x.device)
            if key not in self._ones:
                self._ones[key] = torch.ones_like(x)
            return self._ones[key].clone()
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
