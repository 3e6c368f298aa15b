"""ResNet basic block (inference): conv3x3-BN-ReLU, conv3x3-BN, plus the identity shortcut,
then ReLU, on (batch_size, channels, image_size, image_size) feature maps.

Compute-bound: two 3x3 convolutions of 18*channels FLOPs per output element each; the two
BatchNorms (foldable into the convolutions), the residual add and the ReLUs are memory-bound
passes around them.
"""

import torch
import torch.nn as nn

# default forward: ~8 ms on the 2-vCPU dev machine
batch_size = 4
channels = 64
image_size = 28

#: Knob settings worth testing besides the default: 1x1 everything, odd and prime sizes, and
#: a larger feature map.
SHAPES = [
    dict(batch_size=1, channels=1, image_size=1),
    dict(batch_size=3, channels=5, image_size=7),
    dict(batch_size=2, channels=13, image_size=29),
    dict(batch_size=4, channels=64, image_size=56),
]

#: An inference task: BatchNorm normalises with its running statistics. Without this,
#: kernelproof keeps PyTorch's default training mode, as KernelBench's harness does.
POLICY = {"mode": "eval"}


class Model(nn.Module):
    """``relu(bn2(conv2(relu(bn1(conv1(x))))) + x)`` with random BatchNorm statistics."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + x)


def get_inputs():
    return [torch.randn(batch_size, channels, image_size, image_size)]


def get_init_inputs():
    return [channels]
