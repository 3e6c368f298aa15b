# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Input mutation with a right answer: computes the softmax in place in its input, returns a copy.

HACKS row 5, the quieter form. Working in place saves an allocation, and the returned values are
correct, so a correctness check alone is happy. But the caller's tensor is destroyed: in a
model, the next layer (or a residual connection) reads softmax values instead of its input; in
an evaluator that reuses the input, the reference is then run on the candidate's output.

What catches it: the harness compares every input with a pristine copy after each call. The
outputs match, the inputs do not: ``input-mutation``, ``suspect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.sub_(x.amax(dim=-1, keepdim=True)).exp_()
        x.div_(x.sum(dim=-1, keepdim=True))
        return x.clone()
