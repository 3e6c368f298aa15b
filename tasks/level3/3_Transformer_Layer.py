"""A pre-norm transformer encoder layer with causal self-attention:
``x = x + attn(ln1(x)); x = x + mlp(ln2(x))`` on (batch_size, seq_len, d_model) with
``d_model = heads * head_dim`` and a 4x GELU MLP.

Compute-bound: about 24*tokens*d_model^2 FLOPs in the projections and MLP plus
4*batch*heads*seq_len^2*head_dim in attention, against weights read once per call; the norms,
residuals and GELU are memory-bound passes around them.
"""

import torch
import torch.nn as nn

# default forward: ~9 ms on the 2-vCPU dev machine
batch_size = 2
seq_len = 128
heads = 4
head_dim = 64

#: Knob settings worth testing besides the default: one token and one head, odd and prime
#: sizes, and a longer sequence.
SHAPES = [
    dict(batch_size=1, seq_len=1, heads=1, head_dim=1),
    dict(batch_size=3, seq_len=7, heads=3, head_dim=5),
    dict(batch_size=2, seq_len=37, heads=5, head_dim=11),
    dict(batch_size=2, seq_len=256, heads=4, head_dim=64),
]


class Model(nn.Module):
    """Pre-norm attention and MLP sublayers, each added back to the residual stream."""

    def __init__(self, heads: int, head_dim: int, eps: float = 1e-5):
        super().__init__()
        self.heads = heads
        self.head_dim = head_dim
        d_model = heads * head_dim
        self.ln1 = nn.LayerNorm(d_model, eps=eps)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model, eps=eps)
        self.fc1 = nn.Linear(d_model, 4 * d_model)
        self.fc2 = nn.Linear(4 * d_model, d_model)
        with torch.no_grad():
            for norm in (self.ln1, self.ln2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, d_model = x.shape
        qkv = self.qkv(self.ln1(x)).view(batch, length, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out_proj(attended.transpose(1, 2).reshape(batch, length, d_model))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


def get_inputs():
    return [torch.randn(batch_size, seq_len, heads * head_dim)]


def get_init_inputs():
    return [heads, head_dim]
