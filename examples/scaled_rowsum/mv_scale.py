# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: the row sum as a matrix-vector product with a vector of ones, then the scale.

Issue 25 class 6: ``suspect`` at a load of about 8 on 2 cores, from a timer cross-check that
read the worker's wait for a CPU as under-reported time.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ones = torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
        return torch.mv(x, ones) * 1.75
