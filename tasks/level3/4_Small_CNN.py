"""A small image classifier: three 3x3 conv + ReLU stages (the first two followed by 2x2 max
pooling), global average pooling and a linear head, on (batch_size, 3, image_size,
image_size) images. Pooling rounds up, so any image size down to 1 is valid.

Compute-bound: the convolutions do 2*in*9 FLOPs per output element on small activations that
stay in cache; pooling, ReLU and the head are a small share of the time.
"""

import torch
import torch.nn as nn

# default forward: ~10 ms on the 2-vCPU dev machine
batch_size = 8
image_size = 64
width = 16
num_classes = 10

#: Knob settings worth testing besides the default: one 1x1 image, odd and prime sizes, and a
#: larger image.
SHAPES = [
    dict(batch_size=1, image_size=1, width=1, num_classes=1),
    dict(batch_size=3, image_size=7, width=3, num_classes=5),
    dict(batch_size=2, image_size=31, width=5, num_classes=13),
    dict(batch_size=8, image_size=96, width=16, num_classes=10),
]


class Model(nn.Module):
    """conv(3->w) relu pool, conv(w->2w) relu pool, conv(2w->4w) relu, mean, linear."""

    def __init__(self, width: int, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2, ceil_mode=True),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2, ceil_mode=True),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1),
            nn.ReLU(),
        )
        self.head = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [width, num_classes]
