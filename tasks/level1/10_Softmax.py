"""Softmax over the last dimension of (batch_size, dim) attention-score-like logits.

Memory-bound: about 5 FLOPs and one exp per element against 8 bytes read and written, ~1 FLOP/byte.
"""

import torch
import torch.nn as nn

batch_size = 256
dim = 8192
# default forward: ~2.7 ms on the 2-vCPU dev machine

#: A single logit (output exactly 1), odd/prime rows, and long rows.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=5, dim=33),
    dict(batch_size=31, dim=4099),
    dict(batch_size=32, dim=65536),
]


class Model(nn.Module):
    """``torch.softmax(x, dim=-1)``."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    # Logits with a spread of ~3: peaked enough that a missing max-subtraction or a wrong sum
    # shows, spread enough that many entries matter.
    return [torch.randn(batch_size, dim) * 3.0]


def get_init_inputs():
    return []
