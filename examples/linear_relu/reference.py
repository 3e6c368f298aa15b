"""A linear layer followed by ReLU: relu(x @ W.T + b), x of shape (batch_size, in_features)."""

import torch
import torch.nn as nn

batch_size = 64
in_features = 1024
out_features = 512

#: Knob settings worth testing besides the default: size 1, odd and prime sizes.
SHAPES = [
    dict(batch_size=1, in_features=1, out_features=1),
    dict(batch_size=3, in_features=17, out_features=5),
    dict(batch_size=31, in_features=257, out_features=127),
    dict(batch_size=65, in_features=1031, out_features=513),
]


class Model(nn.Module):
    """``nn.Linear(in_features, out_features)`` then ReLU."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
