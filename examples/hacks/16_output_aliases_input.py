# kernelproof-reference: ../tiny_add/reference.py
# kernelproof-expect: suspect
"""Output aliases an input: ``y.add_(x, alpha=scale)`` computes the answer in ``y`` and returns ``y``.

HACKS row 16. An in-place op needs no output allocation and one fewer memory pass, and the value
returned is exactly right. But the "output" is the caller's input tensor: anything that still
holds ``y`` now sees ``x * scale + y``, and an evaluator that compares the output with a
reference computed afterwards from the same ``y`` compares the answer with itself.

What catches it: the storage-overlap check on every output (``output-aliases-input``,
``suspect``); the mutated input is caught too (``input-mutation``). The values are right, so the
verdict is ``suspect``, not ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return y.add_(x, alpha=self.scale)
