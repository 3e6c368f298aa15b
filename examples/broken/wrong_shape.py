# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Wrong output shape: returns one value per row instead of the full softmax."""

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.softmax(dim=-1).amax(dim=-1)
