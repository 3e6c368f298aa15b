# kernelproof-reference: ../redundant_argmax/reference.py
# kernelproof-expect: verified
"""Honest and legitimately faster: argmax directly instead of a full sort read at index 0.

The reference sorts each row (stable, descending) only to take the first index. ``argmax`` gives
the same index on every input: the first maximal element, NaN counting as the largest value. It
skips O(dim log dim) work, so the speed-up is real, not a measurement artefact.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=-1)
