# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Misbehaving candidate: kills its own process from inside forward with ``os._exit``.

A harness that runs candidates in its own process dies with it. kernelproof's controller
survives and reports ``broken`` with the exit status.
"""

import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os._exit(7)
