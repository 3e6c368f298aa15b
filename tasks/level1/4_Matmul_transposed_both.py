"""Matrix multiplication of two transposed operands: C = A.T @ B.T, A of shape (K, M), B of shape (N, K).

Compute-bound: 2*M*K*N FLOPs over 4*(M*K + K*N + M*N) bytes, ~120 FLOP/byte at the default sizes.
"""

import torch
import torch.nn as nn

M = 1024
K = 512
N = 768
# default forward: ~12 ms on the 2-vCPU dev machine

#: Size 1, odd and prime sizes (no dimension a multiple of a tile), and a larger product.
SHAPES = [
    dict(M=1, K=1, N=1),
    dict(M=33, K=7, N=65),
    dict(M=257, K=509, N=127),
    dict(M=1536, K=1024, N=1024),
]


class Model(nn.Module):
    """Both operands arrive stored transposed (column-major views of the logical matrices)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B.T)


def get_inputs():
    return [torch.randn(K, M), torch.randn(N, K)]


def get_init_inputs():
    return []
