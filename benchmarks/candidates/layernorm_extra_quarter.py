# kernelproof-reference: ../../tasks/level1/7_LayerNorm.py
"""Benchmark fixture: the LayerNorm suite task (16 MiB of inputs) plus a quarter more of the same
work (a layer norm over a quarter of the batch, discarded), so it is known to be ~1.25x slower.
The weights are the reference's (same names), handed over by the harness."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.norm(x)
        self.norm(x[: max(1, x.shape[0] // 4)])
        return out
