# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Misbehaving candidate: never returns from forward. The per-call timeout catches it."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            pass
