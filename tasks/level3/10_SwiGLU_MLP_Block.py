"""LLaMA-style MLP sublayer: RMSNorm, a SwiGLU feed-forward
(``down(silu(gate(h)) * up(h))``, no biases, ``ffn_dim = 3 * d_model``), and the residual add,
on (batch_size, seq_len, d_model) activations.

Compute-bound: three GEMMs of 2*tokens*d_model*ffn_dim FLOPs each on weights read once per
call; the RMSNorm, SiLU gate and residual are memory-bound passes a fused kernel absorbs.
"""

import torch
import torch.nn as nn

# default forward: ~10 ms on the 2-vCPU dev machine
batch_size = 4
seq_len = 128
d_model = 256

#: Knob settings worth testing besides the default: one token of width 1, odd and prime sizes,
#: and a wider model.
SHAPES = [
    dict(batch_size=1, seq_len=1, d_model=1),
    dict(batch_size=3, seq_len=5, d_model=17),
    dict(batch_size=2, seq_len=29, d_model=127),
    dict(batch_size=4, seq_len=128, d_model=384),
]


class Model(nn.Module):
    """``x + down(silu(gate(rmsnorm(x))) * up(rmsnorm(x)))``."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        ffn_dim = 3 * d_model
        self.eps = eps
        self.norm_weight = nn.Parameter(torch.empty(d_model).uniform_(0.5, 1.5))
        self.gate = nn.Linear(d_model, ffn_dim, bias=False)
        self.up = nn.Linear(d_model, ffn_dim, bias=False)
        self.down = nn.Linear(ffn_dim, d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.norm_weight
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model]
