"""GEMM with a stored (in_features, out_features) weight, bias add, then tanh-approximated
GELU, on x of shape (batch_size, in_features) (the GPT-2 MLP's first half).

Compute-bound: 2*batch*in*out FLOPs on batch*(in+out) + in*out floats; the bias and GELU are
elementwise epilogues a fused kernel applies while the output tile is still in registers.
"""

import torch
import torch.nn as nn

# default forward: ~5 ms on the 2-vCPU dev machine
batch_size = 256
in_features = 1024
out_features = 512

#: Knob settings worth testing besides the default: size 1, odd and prime sizes, and larger.
SHAPES = [
    dict(batch_size=1, in_features=1, out_features=1),
    dict(batch_size=5, in_features=31, out_features=13),
    dict(batch_size=63, in_features=509, out_features=257),
    dict(batch_size=512, in_features=1024, out_features=768),
]


class Model(nn.Module):
    """``gelu(x @ weight + bias, approximate="tanh")`` with weight stored input-major."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_features, out_features) / in_features**0.5)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.weight) + self.bias
        return torch.nn.functional.gelu(y, approximate="tanh")


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
