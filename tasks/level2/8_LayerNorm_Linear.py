"""Pre-norm projection: LayerNorm over the hidden dimension, then a linear layer, on
(batch_size, seq_len, hidden) activations.

Compute-bound: the GEMM does 2*hidden*out_features FLOPs per token on hidden + out_features
floats per token; the LayerNorm is one pass over the input that a fused kernel does on the fly.
"""

import torch
import torch.nn as nn

# default forward: ~9 ms on the 2-vCPU dev machine
batch_size = 8
seq_len = 64
hidden = 512
out_features = 1024

#: Knob settings worth testing besides the default: size 1, odd and prime sizes, and larger.
SHAPES = [
    dict(batch_size=1, seq_len=1, hidden=1, out_features=1),
    dict(batch_size=3, seq_len=5, hidden=33, out_features=7),
    dict(batch_size=2, seq_len=31, hidden=251, out_features=127),
    dict(batch_size=8, seq_len=128, hidden=768, out_features=768),
]


class Model(nn.Module):
    """``Linear(LayerNorm(x))`` with a random LayerNorm affine."""

    def __init__(self, hidden: int, out_features: int, eps: float = 1e-5):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=eps)
        self.proj = nn.Linear(hidden, out_features)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.norm(x))


def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs():
    return [hidden, out_features]
