# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""A softmax that is wrong only for batches of 600 to 1000 rows, a size the matrix never
tries (it tries 1, 32, 61, 64, 65, 128, 256, 512 and past 2^17): outside the envelope.

The guard sends such calls to the reference, so the wrong path is never taken.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        out = e / e.sum(dim=-1, keepdim=True)
        if 600 <= x.shape[0] <= 1000:
            out = out * 2.0  # the bug, at sizes nobody verified
        return out
