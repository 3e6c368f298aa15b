"""One step of an LSTM cell: ``nn.LSTMCell(input_size, hidden_size)`` on an input of shape
(batch_size, input_size) and a state (h, c), each (batch_size, hidden_size); returns the new
(h, c).

Compute-bound: at the default size two GEMMs (8*batch*hidden*(input+hidden) FLOPs) dominate;
the gate math (three sigmoids and two tanhs per hidden unit) is a memory-bound epilogue.
"""

import torch
import torch.nn as nn

# default forward: ~7 ms on the 2-vCPU dev machine
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
    """``nn.LSTMCell``: input, forget, cell and output gates; returns ``(h_next, c_next)``."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor,
                c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h_next, c_next = self.cell(x, (h, c))
        return h_next, c_next


def get_inputs():
    # h in the tanh range; the cell state drifts wider over a sequence.
    return [torch.randn(batch_size, input_size),
            torch.rand(batch_size, hidden_size) * 2 - 1,
            torch.randn(batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
