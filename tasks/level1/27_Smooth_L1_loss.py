"""Mean smooth-L1 (Huber, beta = 1) loss between (batch_size, dim) predictions and targets: a scalar.

Memory-bound: ~4 FLOPs per element pair against 8 bytes read, 0.5 FLOP/byte; the output is one number.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 1024
# default forward: ~4.5 ms on the 2-vCPU dev machine

#: A single pair, odd/prime sizes, and a wider regression target.
SHAPES = [
    dict(batch_size=1, dim=1),
    dict(batch_size=3, dim=7),
    dict(batch_size=131, dim=1021),
    dict(batch_size=512, dim=8192),
]


class Model(nn.Module):
    """``F.smooth_l1_loss(predictions, targets, beta=1.0)`` with mean reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(predictions, targets, beta=1.0)


def get_inputs():
    # Residuals of ~1.4 in scale, so both the quadratic (|d| < 1) and the linear branch matter.
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
