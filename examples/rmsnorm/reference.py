"""RMSNorm over the last dimension with a learnable weight: x / sqrt(mean(x^2) + eps) * weight."""

import torch
import torch.nn as nn

batch_size = 8
seq_len = 128
hidden = 1024

#: Knob settings worth testing besides the default: size 1, odd and prime sizes.
SHAPES = [
    dict(batch_size=1, seq_len=1, hidden=1),
    dict(batch_size=2, seq_len=3, hidden=7),
    dict(batch_size=3, seq_len=5, hidden=257),
    dict(batch_size=1, seq_len=13, hidden=4099),
]


class Model(nn.Module):
    """RMSNorm with eps=1e-6.

    The weight starts near one but not at one: a weight of all ones would let a candidate that
    ignores the weight pass.
    """

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden]
