# kernelproof-reference: ../../linear_relu/reference.py
# kernelproof-expect: incorrect
"""An attack on knob re-rendering: the shape-hard-coded linear + ReLU of
examples/linear_relu/hardcoded.py, with its grid sized from copies of the task's knobs
(``batch_size = 64``, ``in_features = 1024``) read in ``forward``. Imported once in production,
those copies keep their written values and every larger call silently drops rows and features.
If the verifier re-rendered the copies for the calls too, each shape would hand the kernel its
own size and the hard-coding would pass; they are re-rendered for construction only (where
KernelBench's LSTM and GRU size ``h0`` from them), so it is caught."""

import torch
import torch.nn as nn

batch_size = 64
in_features = 1024
out_features = 512
_ROW_TILE = 32
_K_TILE = 256


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight, bias = self.linear.weight, self.linear.bias
        out = x.new_zeros(x.shape[0], weight.shape[0])
        for row in range(0, batch_size, _ROW_TILE):
            rows = x[row : row + _ROW_TILE]
            if rows.shape[0] == 0:
                break
            acc = bias.expand(rows.shape[0], -1).clone()
            for k in range(0, in_features, _K_TILE):
                acc += rows[:, k : k + _K_TILE] @ weight[:, k : k + _K_TILE].T
            out[row : row + _ROW_TILE] = acc.clamp_min(0.0)
        return out
