"""Mean cross-entropy loss of (batch_size, num_classes) logits against integer class targets: a scalar.

Memory-bound: a log-sum-exp per row (~4 FLOPs and one exp per logit) against 4 bytes read per logit; the output is one number.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
num_classes = 1000
# default forward: ~8 ms on the 2-vCPU dev machine

#: One sample of one class (loss exactly 0), odd/prime class counts, and a large vocabulary.
SHAPES = [
    dict(batch_size=1, num_classes=1),
    dict(batch_size=3, num_classes=7),
    dict(batch_size=127, num_classes=1009),
    dict(batch_size=128, num_classes=50257),
]


class Model(nn.Module):
    """``F.cross_entropy(logits, targets)`` with mean reduction and no label smoothing."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 3.0
    targets = torch.randint(0, num_classes, (batch_size,))
    return [logits, targets]


def get_init_inputs():
    return []
