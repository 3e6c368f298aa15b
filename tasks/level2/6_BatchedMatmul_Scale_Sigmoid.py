"""Batched matrix product of two inputs, scaled, then sigmoid: ``sigmoid(scale * (a @ b))``
with a of shape (batch_size, m, k) and b of shape (batch_size, k, n).

Compute-bound: 2*batch*m*n*k FLOPs on batch*(m*k + k*n + m*n) floats; the scale and sigmoid are
an elementwise epilogue over the (batch_size, m, n) product.
"""

import torch
import torch.nn as nn

# default forward: ~5 ms on the 2-vCPU dev machine
batch_size = 8
m = 256
k = 256
n = 256

#: Knob settings worth testing besides the default: size 1, odd and prime sizes, and larger.
SHAPES = [
    dict(batch_size=1, m=1, k=1, n=1),
    dict(batch_size=3, m=7, k=17, n=5),
    dict(batch_size=2, m=127, k=251, n=61),
    dict(batch_size=16, m=128, k=512, n=256),
]


class Model(nn.Module):
    """``torch.sigmoid(torch.bmm(a, b) * scale)``."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.bmm(a, b) * self.scale)


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, k, n)]


def get_init_inputs():
    return [0.0625]  # 1/sqrt(256): unit-variance logits at the default k
