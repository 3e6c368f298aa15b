# kernelproof-reference: reference.py
# kernelproof-expect: incorrect
"""Shape-hard-coded linear + ReLU: the launch grid is sized for the reference's default shape.

The row tiles cover the default ``batch_size`` (64) and the reduction tiles cover the default
``in_features`` (1024), both copied into this file. At the default shape, and at any shape no
larger, every output is computed. With more rows the extra output rows stay zero; with more input
features the tail of each dot product is dropped. Both are silent.
"""

import torch
import torch.nn as nn

#: The reference's default ``batch_size``, baked into the grid.
_BATCH = 64
#: The reference's default ``in_features``, baked into the reduction loop.
_IN_FEATURES = 1024
_ROW_TILE = 32
_K_TILE = 256


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.linear.weight, self.linear.bias
        out = x.new_zeros(x.shape[0], weight.shape[0])
        for row in range(0, _BATCH, _ROW_TILE):
            rows = x[row : row + _ROW_TILE]
            if rows.shape[0] == 0:
                break
            acc = bias.expand(rows.shape[0], -1).clone()
            for k in range(0, _IN_FEATURES, _K_TILE):
                acc += rows[:, k : k + _K_TILE] @ weight[:, k : k + _K_TILE].T
            out[row : row + _ROW_TILE] = acc.clamp_min(0.0)
        return out
