"""2-D convolution without bias, BatchNorm in inference mode (running statistics), then ReLU:
the conv-BN-ReLU unit of every ResNet-style CNN, on (batch_size, in_channels, size, size).

Compute-bound: the convolution does 2*in*k*k FLOPs per output element against one read of the
input; BatchNorm and ReLU are elementwise passes a fused kernel (or folded weights) removes.
"""

import torch
import torch.nn as nn

# default forward: ~5 ms on the 2-vCPU dev machine
batch_size = 8
in_channels = 32
out_channels = 64
image_size = 32
kernel_size = 3

#: Knob settings worth testing besides the default: 1x1 everything, odd and prime sizes,
#: a 5x5 kernel, and a larger image.
SHAPES = [
    dict(batch_size=1, in_channels=1, out_channels=1, image_size=1, kernel_size=1),
    dict(batch_size=3, in_channels=5, out_channels=7, image_size=11, kernel_size=5),
    dict(batch_size=2, in_channels=13, out_channels=31, image_size=17, kernel_size=3),
    dict(batch_size=8, in_channels=32, out_channels=64, image_size=64, kernel_size=3),
]

#: An inference task: BatchNorm normalises with its running statistics. Without this,
#: kernelproof keeps PyTorch's default training mode, as KernelBench's harness does.
POLICY = {"mode": "eval"}


class Model(nn.Module):
    """``relu(batch_norm(conv2d(x)))`` with random running statistics and affine, so that the
    BatchNorm is far from the identity (``POLICY`` puts the model in eval mode)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size,
                              padding=kernel_size // 2, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(batch_size, in_channels, image_size, image_size)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
