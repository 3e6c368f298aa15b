# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Output cache keyed on shape: computes once per shape, then returns the same tensor forever.

HACKS row 9. Benchmarks often time one input over and over, so a cache keyed on the input's
shape (or pointer, or id) turns every timed call after the first into a dictionary lookup. The
first answer is right, and an evaluator that checks only the first call, or reuses the same
input, never notices.

What catches it: every call gets fresh input values (several seeds at the default shape, value
and layout variants), so the replayed answer is wrong from the second call on (``incorrect``).
The returned tensor is also the very buffer of an earlier output (``output-aliases-earlier-
output``). In the timing phase, timed calls get fresh inputs and a sample of their outputs is
verified.
"""

import torch
import torch.nn as nn

_cache: dict = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in _cache:
            e = (x - x.amax(dim=-1, keepdim=True)).exp()
            _cache[key] = e / e.sum(dim=-1, keepdim=True)
        return _cache[key]
