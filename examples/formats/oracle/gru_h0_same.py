# kernelproof-reference: gru_h0.py
# kernelproof-expect: verified
"""The reference itself, renamed (verify with --allow-torch): its h0 is drawn under the same
seed, as KernelBench relies on."""

import torch
import torch.nn as nn

batch_size = 4
seq_len = 16
input_size = 32
hidden_size = 48
num_layers = 2


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=False)
        self.h0 = torch.randn((num_layers, batch_size, hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.h0 = self.h0.to(x.device)
        output, _ = self.gru(x, self.h0)
        return output


def get_inputs():
    return [torch.randn(seq_len, batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
