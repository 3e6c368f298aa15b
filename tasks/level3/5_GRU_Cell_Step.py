"""One step of a GRU cell: ``nn.GRUCell(input_size, hidden_size)`` on an input of shape
(batch_size, input_size) and a hidden state of shape (batch_size, hidden_size).

Compute-bound: at the default size two GEMMs (6*batch*hidden*(input+hidden) FLOPs) dominate;
the gate math (three sigmoids or tanhs per hidden unit) is a memory-bound epilogue.
"""

import torch
import torch.nn as nn

# default forward: ~4 ms on the 2-vCPU dev machine
batch_size = 64
input_size = 512
hidden_size = 512

#: Knob settings worth testing besides the default: size 1, odd and prime sizes, and larger.
SHAPES = [
    dict(batch_size=1, input_size=1, hidden_size=1),
    dict(batch_size=3, input_size=7, hidden_size=5),
    dict(batch_size=17, input_size=127, hidden_size=251),
    dict(batch_size=128, input_size=512, hidden_size=1024),
]


class Model(nn.Module):
    """``nn.GRUCell``: reset, update and candidate gates from both the input and the state."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return self.cell(x, h)


def get_inputs():
    # A hidden state in the tanh range (-1, 1), as a GRU produces.
    return [torch.randn(batch_size, input_size), torch.rand(batch_size, hidden_size) * 2 - 1]


def get_init_inputs():
    return [input_size, hidden_size]
