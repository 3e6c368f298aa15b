"""Square matrix multiplication: C = A @ B with A and B of shape (N, N).

Compute-bound: 2*N^3 FLOPs over 12*N^2 bytes moved, an arithmetic intensity of N/6 FLOP/byte.
"""

import torch
import torch.nn as nn

N = 1024
# default forward: ~35 ms on the 2-vCPU dev machine

#: Size 1, odd and prime sizes, and one larger than the default (still under 4 GFLOP).
SHAPES = [
    dict(N=1),
    dict(N=127),
    dict(N=509),
    dict(N=1200),
]


class Model(nn.Module):
    """A single square matrix product."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
