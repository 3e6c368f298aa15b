"""Layer normalisation over the last dimension of a (batch_size, seq_len, hidden) activation, with learned affine.

Memory-bound: about 8 FLOPs per element against 8 bytes read and written, ~1 FLOP/byte.
"""

import torch
import torch.nn as nn

batch_size = 16
seq_len = 256
hidden = 1024
# default forward: ~4 ms on the 2-vCPU dev machine

#: A single element per row, odd/prime hidden sizes, and longer rows.
SHAPES = [
    dict(batch_size=1, seq_len=1, hidden=1),
    dict(batch_size=3, seq_len=5, hidden=37),
    dict(batch_size=2, seq_len=127, hidden=1021),
    dict(batch_size=4, seq_len=128, hidden=8192),
]


class Model(nn.Module):
    """``nn.LayerNorm(hidden)``; weight and bias are drawn around (1, 0) so ignoring them fails."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.normal_(1.0, 0.2)
            self.norm.bias.normal_(0.0, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    # Residual-stream-like activations: an offset per row, so the mean must really be removed.
    return [torch.randn(batch_size, seq_len, hidden) * 2.0 + torch.randn(batch_size, seq_len, 1)]


def get_init_inputs():
    return [hidden]
