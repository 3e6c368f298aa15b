"""A DenseNet-like stack of five conv + 2x2 average-pool stages, then a global pool and a
classifier. Its pools need an image of at least 32 pixels: below that the reference itself
fails. At its own shape (batch 256, 224 x 224) it is far over a CPU budget: halving the image
from 56 to 28 breaks the reference, so sizing must keep 56 and shrink the batch instead."""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 256
channels = 64
image_size = 224
num_classes = 10


class Model(nn.Module):
    def __init__(self, channels: int, num_classes: int):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, kernel_size=3, padding=1)
        self.stages = nn.ModuleList(
            nn.Conv2d(channels, channels, kernel_size=3, padding=1) for _ in range(5)
        )
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for stage in self.stages:
            # A fixed 2x2 pool per stage, as in DenseNet's transitions: fails below 1 pixel.
            x = F.avg_pool2d(F.relu(stage(x)), kernel_size=2, stride=2)
        return self.classifier(x.mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [channels, num_classes]
