"""Causal scaled-dot-product attention, softmax(Q K^T / sqrt(head_dim) + causal mask) V, per (batch, head).

Compute-bound: 4*seq_len^2*head_dim FLOPs per head over 16*seq_len*head_dim bytes of Q, K, V and output, ~seq_len/4 FLOP/byte.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
num_heads = 8
seq_len = 512
head_dim = 64
# default forward: ~38 ms on the 2-vCPU dev machine

#: One query attending to itself, odd/prime sequence lengths and head sizes, and a longer
#: sequence with fewer heads.
SHAPES = [
    dict(batch_size=1, num_heads=1, seq_len=1, head_dim=1),
    dict(batch_size=2, num_heads=3, seq_len=17, head_dim=5),
    dict(batch_size=1, num_heads=5, seq_len=257, head_dim=48),
    dict(batch_size=1, num_heads=8, seq_len=1280, head_dim=64),
]


class Model(nn.Module):
    """``F.scaled_dot_product_attention(q, k, v, is_causal=True)``, default scale."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    # Queries scaled up a little so attention is peaked rather than a near-uniform average.
    return [torch.randn(shape) * 2.0, torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
