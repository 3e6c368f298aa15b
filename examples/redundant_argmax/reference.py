"""Index of each row's maximum, computed wastefully: a full stable sort to read one element.

The sort is genuinely redundant (O(dim log dim) where O(dim) suffices), so an honest candidate
can be much faster by calling argmax directly.

Why a sort and not ``softmax(x).argmax(-1)``: softmax is not argmax-preserving on every input
the reference accepts. A row holding +Inf or NaN softmaxes to all NaN (argmax 0, where
``x.argmax`` names the Inf or NaN), and exp() can round two distinct near-maximal values to the
same float. A stable descending sort orders values exactly as argmax does (NaN largest, ties
to the first index), so skipping it is a legitimate speed-up on every input, special values
included.
"""

import torch
import torch.nn as nn

batch_size = 32
dim = 2048

#: Knob settings worth testing besides the default: size 1, odd and prime sizes.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=5),
    dict(batch_size=7, dim=1021),
]


class Model(nn.Module):
    """Argmax over the last dimension, via a stable descending sort."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        order = torch.sort(x, dim=-1, descending=True, stable=True).indices
        return order[..., 0]


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
