"""torch.gather along dim 1: out[b, j] = x[b, index[b, j]] for x of shape (batch_size, dim), index (batch_size, num_indices).

Memory-bound: no arithmetic; random reads within each row of x plus a streaming read of the index and write of the output.
"""

import torch
import torch.nn as nn

batch_size = 256
dim = 8192
num_indices = 4096
# default forward: ~4.4 ms on the 2-vCPU dev machine

#: One element, odd/prime sizes with more indices than the row has elements (repeats), and
#: long rows.
SHAPES = [
    dict(batch_size=1, dim=1, num_indices=1),
    dict(batch_size=3, dim=5, num_indices=13),
    dict(batch_size=31, dim=1021, num_indices=509),
    dict(batch_size=16, dim=131072, num_indices=65536),
]


class Model(nn.Module):
    """``torch.gather(x, 1, index)``; the gathered axis is fixed, not a knob."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        return torch.gather(x, 1, index)


def get_inputs():
    x = torch.randn(batch_size, dim)
    index = torch.randint(0, dim, (batch_size, num_indices))
    return [x, index]


def get_init_inputs():
    return []
