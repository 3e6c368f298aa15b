"""Multi-head causal self-attention block: one fused QKV projection, scaled dot-product
attention per head, and the output projection, on (batch_size, seq_len, d_model) activations
with ``d_model = heads * head_dim`` (so any knob values are valid).

Compute-bound: the projections do 8*tokens*d_model^2 FLOPs and the attention
4*batch*heads*seq_len^2*head_dim, on far fewer bytes (weights read once, activations a few
times).
"""

import torch
import torch.nn as nn

# default forward: ~7 ms on the 2-vCPU dev machine
batch_size = 4
seq_len = 128
heads = 8
head_dim = 32

#: Knob settings worth testing besides the default: one token and one head, odd and prime
#: sizes, and a longer sequence.
SHAPES = [
    dict(batch_size=1, seq_len=1, heads=1, head_dim=1),
    dict(batch_size=3, seq_len=7, heads=3, head_dim=5),
    dict(batch_size=2, seq_len=61, heads=5, head_dim=13),
    dict(batch_size=2, seq_len=256, heads=8, head_dim=32),
]


class Model(nn.Module):
    """``out_proj(sdpa(q, k, v, causal))`` with q, k, v from one ``nn.Linear(d, 3d)``."""

    def __init__(self, heads: int, head_dim: int):
        super().__init__()
        self.heads = heads
        self.head_dim = head_dim
        d_model = heads * head_dim
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, d_model = x.shape
        qkv = self.qkv(x).view(batch, length, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, head_dim)
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(attended.transpose(1, 2).reshape(batch, length, d_model))


def get_inputs():
    return [torch.randn(batch_size, seq_len, heads * head_dim)]


def get_init_inputs():
    return [heads, head_dim]
