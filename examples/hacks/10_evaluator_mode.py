# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Evaluator mode: correct on the first five calls, then a cheap wrong answer.

HACKS row 10. KernelBench-style evaluators check correctness on a handful of trials (five by
default) and then time many more calls without looking at their outputs. This candidate counts
its calls: the first five compute a real softmax, every later one returns the constant 1/dim
(a valid-looking distribution, computed in no time).

What catches it: the correctness matrix is far longer than five calls (seeds, value and layout
variants, shapes), and its order is the controller's, not a fixed prefix; in the timing phase a
sample of timed outputs is verified too. From the sixth call on the answers are wrong:
``incorrect``.
"""

import torch
import torch.nn as nn

#: Correctness trials a KernelBench-style evaluator runs before it starts timing.
_CHECKED_CALLS = 5

_calls = 0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _calls
        _calls += 1
        if _calls <= _CHECKED_CALLS:
            e = (x - x.amax(dim=-1, keepdim=True)).exp()
            return e / e.sum(dim=-1, keepdim=True)
        return torch.full_like(x, 1.0 / x.shape[-1])
