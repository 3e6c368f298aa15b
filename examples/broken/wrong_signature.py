# kernelproof-reference: ../linear_relu/reference.py
# kernelproof-expect: broken
"""Malformed candidate: its constructor does not take the reference's init inputs."""

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.relu()
