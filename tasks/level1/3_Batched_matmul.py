"""Batched matrix multiplication: C[b] = A[b] @ B[b], A of shape (batch_size, m, k), B (batch_size, k, n).

Compute-bound: 2*m*k*n FLOPs per batch entry over 4*(m*k + k*n + m*n) bytes, ~43 FLOP/byte at m = k = n = 256.
"""

import torch
import torch.nn as nn

batch_size = 32
m = 256
k = 256
n = 256
# default forward: ~16 ms on the 2-vCPU dev machine

#: One 1x1x1 product, odd and prime sizes, and fewer but larger matrices.
SHAPES = [
    dict(batch_size=1, m=1, k=1, n=1),
    dict(batch_size=3, m=17, k=5, n=31),
    dict(batch_size=7, m=127, k=251, n=61),
    dict(batch_size=8, m=512, k=384, n=512),
]


class Model(nn.Module):
    """``torch.bmm`` over a batch of independent products."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return []
