"""Tall-skinny matrix multiplication: C = A @ B with A of shape (M, K), B of shape (K, N), M >> K, N.

Memory-bound: with K = N = 16 the intensity is about K*N / (2*(K + N)) = 4 FLOP/byte; streaming A and C dominates.
"""

import torch
import torch.nn as nn

M = 131072
K = 16
N = 16
# default forward: ~3.5 ms on the 2-vCPU dev machine

#: Size 1 everywhere, odd and prime sizes, and a taller, wider product.
SHAPES = [
    dict(M=1, K=1, N=1),
    dict(M=1001, K=3, N=7),
    dict(M=65521, K=17, N=13),
    dict(M=262144, K=16, N=24),
]


class Model(nn.Module):
    """A tall, thin matrix times a small square-ish one."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
