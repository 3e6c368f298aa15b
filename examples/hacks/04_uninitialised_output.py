# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Uninitialised output: returns ``torch.empty_like(x)`` and computes nothing.

HACKS row 4. In an evaluator that runs the reference and the candidate in one process, the
reference's output has just been freed; the allocator hands the same block straight back to
``empty_like``, still holding the right answer (on CUDA this happens almost every time). The
candidate "passes" without doing any work.

What catches it: the reference runs in another process, so its answer is never in this
process's memory; the harness writes NaN into freed memory before each call; and every call
uses fresh seeds. Whatever the empty block holds, it is not the softmax of this input: the
candidate is ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # "The kernel writes into this buffer" - no kernel ever does.
        return torch.empty_like(x)
