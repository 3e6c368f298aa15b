"""A gated MLP block (GeGLU, as in T5 v1.1 and Gemma): the host that will run a GELU kernel.

One projection makes both halves, ``chunk`` splits them without a copy, so the activation
receives the gate half as a view whose rows are strided by twice its width: a layout a
benchmark of the activation alone (random contiguous inputs) never poses. The activation is
the tanh GELU written out as the paper gives it, about 40% of the block's time here.
"""

import torch
import torch.nn as nn

batch_size = 4
tokens = 64
hidden = 64
expansion = 8


class TanhGELU(nn.Module):
    """GELU, tanh approximation, eight element-wise ops."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x.pow(3))))


class Model(nn.Module):
    def __init__(self, hidden: int, expansion: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.up = nn.Linear(hidden, 2 * expansion * hidden)
        self.act = TanhGELU()
        self.down = nn.Linear(expansion * hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, gate = self.up(self.norm(x)).chunk(2, dim=-1)  # views: rows strided by 2x
        return x + self.down(self.act(gate) * value)


def get_inputs():
    return [torch.randn(batch_size, tokens, hidden)]


def get_init_inputs():
    return [hidden, expansion]
