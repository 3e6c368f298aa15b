# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Malformed candidate: defines a kernel but no ``ModelNew``."""

import torch


def softmax(x):
    return torch.softmax(x, dim=-1)
