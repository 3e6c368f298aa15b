"""Index of each row's maximum; ties go to the first index, as ``torch.argmax`` documents.

randn rows almost never tie, so a kernel that keeps the *last* maximum passes on noise. The
matrix's integer-valued, quantised and equal-row variants tie often; ``VALUE_VARIANTS`` adds
this task's own generator: rows whose maximum appears exactly twice, at random positions.
"""

import torch
import torch.nn as nn

batch_size = 64
dim = 1000


class Model(nn.Module):
    """Argmax over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


def two_maxima(inputs, generator):
    """Each row's maximum copied to a second, random position: exactly one tie per row."""
    (x,) = inputs
    rows = x.reshape(-1, x.shape[-1])
    first = rows.argmax(dim=-1)
    second = torch.randint(0, rows.shape[-1], (rows.shape[0],), generator=generator)
    rows[torch.arange(rows.shape[0]), second] = rows[torch.arange(rows.shape[0]), first]
    return [rows.reshape(x.shape)]


#: The task's own value generators: name -> function(inputs, generator) -> inputs.
VALUE_VARIANTS = {"two-maxima": two_maxima}
