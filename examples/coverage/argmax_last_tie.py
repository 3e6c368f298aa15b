# kernelproof-reference: argmax/reference.py
# kernelproof-expect: incorrect
"""An argmax that keeps the LAST maximum of each row instead of the first.

On randn rows (no ties) it agrees with ``torch.argmax`` everywhere; on integer-valued,
quantised or equal rows it names another index. Caught by the value variants with ties.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        last = x.shape[-1] - 1
        return last - torch.flip(x, dims=[-1]).max(dim=-1).indices
