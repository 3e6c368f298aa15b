# kernelproof-reference: ../../examples/softmax/reference.py
"""Benchmark fixture: exactly the reference's computation (a passthrough, timed to check that
kernelproof finds no speedup where there is none)."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
