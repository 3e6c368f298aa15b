"""Transformer MLP block: Linear(d_model, 4*d_model), exact GELU, Linear(4*d_model, d_model),
applied to every token of (batch_size, seq_len, d_model) activations.

Compute-bound: two GEMMs of 2*tokens*d_model*4*d_model FLOPs each on weights that are read
once per call; the GELU is one elementwise pass over the (tokens, 4*d_model) intermediate.
"""

import torch
import torch.nn as nn

# default forward: ~11 ms on the 2-vCPU dev machine
batch_size = 4
seq_len = 128
d_model = 256

#: Knob settings worth testing besides the default: one token of width 1, odd and prime sizes,
#: and a wider model.
SHAPES = [
    dict(batch_size=1, seq_len=1, d_model=1),
    dict(batch_size=3, seq_len=5, d_model=17),
    dict(batch_size=2, seq_len=31, d_model=127),
    dict(batch_size=4, seq_len=128, d_model=384),
]


class Model(nn.Module):
    """``fc2(gelu(fc1(x)))`` with a 4x expansion."""

    def __init__(self, d_model: int):
        super().__init__()
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model]
