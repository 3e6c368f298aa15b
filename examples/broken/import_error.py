# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Malformed candidate: imports a module that does not exist."""

import torch.nn as nn

import kernel_that_was_never_written  # noqa: F401


class ModelNew(nn.Module):
    def forward(self, x):
        return x
