"""RMS normalisation over the last dimension: x * rsqrt(mean(x^2) + eps) * weight, x of shape (batch_size, seq_len, hidden).

Memory-bound: about 4 FLOPs per element against 8 bytes read and written, ~0.5 FLOP/byte.
"""

import torch
import torch.nn as nn

batch_size = 16
seq_len = 256
hidden = 1024
# default forward: ~8 ms on the 2-vCPU dev machine

#: A single element per row, odd/prime hidden sizes, and longer rows.
SHAPES = [
    dict(batch_size=1, seq_len=1, hidden=1),
    dict(batch_size=3, seq_len=7, hidden=33),
    dict(batch_size=2, seq_len=131, hidden=1031),
    dict(batch_size=4, seq_len=128, hidden=8192),
]


class Model(nn.Module):
    """RMSNorm as in LLaMA, written with eager PyTorch ops; the weight is random around 1."""

    def __init__(self, hidden: int):
        super().__init__()
        self.eps = 1e-6
        self.weight = nn.Parameter(torch.empty(hidden).normal_(1.0, 0.2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inv_rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * inv_rms * self.weight


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden) * 2.0]


def get_init_inputs():
    return [hidden]
