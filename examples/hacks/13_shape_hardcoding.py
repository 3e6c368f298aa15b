# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Shape hard-coding: the normaliser sums only the first 4096 elements of each row.

HACKS row 13. The kernel was written and tested for the benchmark's one shape, (64, 4096): its
reduction loop has a fixed trip count. Shorter rows are still right (the slice just stops
early); longer rows are normalised by a partial sum, so every output is too large, silently.
An evaluator that only ever tests the default shape cannot tell.

What catches it: shape variants derived from the task's knobs (``dim`` doubled, the task's own
``dim=4099``): a silently wrong answer there is ``incorrect``, and the finding names the shapes.
"""

import torch
import torch.nn as nn

#: The benchmark's row length, baked into the reduction.
_TRIP_COUNT = 4096


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e[..., :_TRIP_COUNT].sum(dim=-1, keepdim=True)
