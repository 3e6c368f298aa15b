"""The host's TanhGELU as a task of its own, at the shape the block calls it with (the MLP's
hidden activations, channels last): what `--replace act=gelu_fused.py:gelu_task.py` verifies
in isolation, and what `kernelproof verify` alone would be run on."""

import torch
import torch.nn as nn

batch_size = 2
size = 16
hidden = 384


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x.pow(3))))


def get_inputs():
    return [torch.randn(batch_size, size, size, hidden)]


def get_init_inputs():
    return []
