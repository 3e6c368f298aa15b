"""MobileNet depthwise-separable block (inference): depthwise 3x3 conv, BN, ReLU6, then
pointwise 1x1 conv, BN, ReLU6, on (batch_size, in_channels, image_size, image_size).

Compute-bound: at the default width the pointwise GEMM (2*in_channels FLOPs per output
element) dominates; the depthwise half is memory-bound (18 FLOPs per element read), and BN and
ReLU6 are elementwise passes that fold into the convolutions.
"""

import torch
import torch.nn as nn

# default forward: ~7 ms on the 2-vCPU dev machine
batch_size = 8
in_channels = 32
out_channels = 64
image_size = 56

#: Knob settings worth testing besides the default: 1x1 everything, odd and prime sizes, and
#: a larger feature map.
SHAPES = [
    dict(batch_size=1, in_channels=1, out_channels=1, image_size=1),
    dict(batch_size=3, in_channels=5, out_channels=7, image_size=9),
    dict(batch_size=2, in_channels=17, out_channels=31, image_size=29),
    dict(batch_size=8, in_channels=64, out_channels=128, image_size=56),
]

#: An inference task: BatchNorm normalises with its running statistics. Without this,
#: kernelproof keeps PyTorch's default training mode, as KernelBench's harness does.
POLICY = {"mode": "eval"}


class Model(nn.Module):
    """dw-conv -> BN -> ReLU6 -> pw-conv -> BN -> ReLU6, with random BatchNorm statistics."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, 3, padding=1,
                                   groups=in_channels, bias=False)
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            for bn in (self.bn1, self.bn2):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.relu6(self.bn1(self.depthwise(x)))
        return torch.nn.functional.relu6(self.bn2(self.pointwise(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, out_channels]
