"""Softmax over attention scores, then the weighted sum of values (no dropout): the second
half of attention, ``softmax(scores, -1) @ values`` with scores of shape
(batch_size, queries, keys) and values of shape (batch_size, keys, value_dim).

Compute-bound: the batched product does 2*queries*keys*value_dim FLOPs per batch on
queries*keys + keys*value_dim floats; the softmax is one memory-bound pass over the scores.
"""

import torch
import torch.nn as nn

# default forward: ~4 ms on the 2-vCPU dev machine
batch_size = 8
queries = 256
keys = 512
value_dim = 64

#: Knob settings worth testing besides the default: size 1, odd and prime sizes, and larger.
SHAPES = [
    dict(batch_size=1, queries=1, keys=1, value_dim=1),
    dict(batch_size=3, queries=5, keys=17, value_dim=3),
    dict(batch_size=2, queries=61, keys=509, value_dim=67),
    dict(batch_size=8, queries=512, keys=512, value_dim=128),
]


class Model(nn.Module):
    """``torch.softmax(scores, -1) @ values``."""

    def __init__(self):
        super().__init__()

    def forward(self, scores: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        return torch.matmul(torch.softmax(scores, dim=-1), values)


def get_inputs():
    # Scores with standard deviation 2: peaked enough to matter, not one-hot.
    return [torch.randn(batch_size, queries, keys) * 2.0,
            torch.randn(batch_size, keys, value_dim)]


def get_init_inputs():
    return []
