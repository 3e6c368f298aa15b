# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Misbehaving candidate: dereferences a null pointer through ctypes (SIGSEGV)."""

import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return ctypes.string_at(0)
