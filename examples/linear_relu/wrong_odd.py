# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Subtly wrong linear + ReLU: rows are processed two at a time and an odd last row is skipped.

Correct whenever ``batch_size`` is even. When it is odd the last output row stays zero (a batch
of one comes back all zeros). It never raises.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.linear.weight, self.linear.bias
        out = x.new_zeros(x.shape[0], weight.shape[0])
        paired = x.shape[0] // 2 * 2
        # "Two rows per program": the grid covers batch_size // 2 pairs and nothing else
        # (every pair at once: one program per pair in a Python loop took 93 s at 131073 rows).
        pairs = x[:paired].reshape(-1, 2, x.shape[1])
        out[:paired] = (pairs @ weight.T + bias).clamp_min(0.0).reshape(paired, -1)
        return out
