"""Attention-score post-processing: scale the (batch_size, heads, seq_len, seq_len) scores,
mask out future positions (causal), softmax over the keys.

Memory-bound: a few FLOPs and one exp per element against one read and one write of the
scores; eager PyTorch makes three passes (scale, masked_fill, softmax) plus building the mask.
"""

import torch
import torch.nn as nn

# default forward: ~11 ms on the 2-vCPU dev machine
batch_size = 4
heads = 8
seq_len = 256

#: Knob settings worth testing besides the default: one query, odd and prime lengths, longer.
SHAPES = [
    dict(batch_size=1, heads=1, seq_len=1),
    dict(batch_size=2, heads=3, seq_len=7),
    dict(batch_size=1, heads=5, seq_len=127),
    dict(batch_size=2, heads=8, seq_len=512),
]


class Model(nn.Module):
    """``softmax(masked_fill(scores * scale, future, -inf), -1)``."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        length = scores.shape[-1]
        future = torch.ones(length, length, dtype=torch.bool, device=scores.device).triu(1)
        scaled = (scores * self.scale).masked_fill(future, float("-inf"))
        return torch.softmax(scaled, dim=-1)


def get_inputs():
    # Scores of unit-variance queries and keys of head_dim 64: standard deviation 8.
    return [torch.randn(batch_size, heads, seq_len, seq_len) * 8.0]


def get_init_inputs():
    return [0.125]  # 1 / sqrt(head_dim) for head_dim 64
