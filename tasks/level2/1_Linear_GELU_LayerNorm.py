"""Linear, then exact (erf) GELU, then LayerNorm over the features: a transformer-style
projection head on x of shape (batch_size, in_features).

Compute-bound: the GEMM does 2*batch*in*out FLOPs on (batch*(in+out) + in*out) floats; GELU and
LayerNorm add two cheap passes over the (batch_size, out_features) output.
"""

import torch
import torch.nn as nn

# default forward: ~4 ms on the 2-vCPU dev machine
batch_size = 256
in_features = 512
out_features = 1024

#: Knob settings worth testing besides the default: size 1, odd and prime sizes, and larger.
SHAPES = [
    dict(batch_size=1, in_features=1, out_features=2),
    dict(batch_size=7, in_features=33, out_features=17),
    dict(batch_size=31, in_features=257, out_features=509),
    dict(batch_size=384, in_features=768, out_features=1024),
]


class Model(nn.Module):
    """``LayerNorm(GELU(Linear(x)))`` with a learned, non-trivial LayerNorm affine."""

    def __init__(self, in_features: int, out_features: int, eps: float = 1e-5):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features, eps=eps)
        with torch.no_grad():  # random affine, so that a kernel ignoring it fails
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.nn.functional.gelu(self.linear(x)))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
