# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Returns ones without reading its input: right on this degenerate task, which is the point.
Verified, with a ``warn`` that names the task as degenerate."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(x)
