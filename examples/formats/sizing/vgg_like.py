"""A VGG-like classifier in KernelBench's style: small 3x3 conv blocks with max pooling, then a
classifier over ``num_classes = 1000``. At its own shape one call needs ~0.4 GB and ~50 GFLOP,
far over a CPU budget; sizing must shrink the batch and the image, never the classes."""

import torch
import torch.nn as nn

batch_size = 32
in_channels = 3
height = 224
width = 224
num_classes = 1000


class Model(nn.Module):
    def __init__(self, num_classes: int):
        super().__init__()
        blocks = []
        channels = in_channels
        for out in (16, 32, 64, 64):
            blocks += [nn.Conv2d(channels, out, kernel_size=3, padding=1), nn.ReLU(),
                       nn.MaxPool2d(kernel_size=2, stride=2)]
            channels = out
        self.features = nn.Sequential(*blocks)
        self.pool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(channels * 4, 256), nn.ReLU(), nn.Linear(256, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [num_classes]
