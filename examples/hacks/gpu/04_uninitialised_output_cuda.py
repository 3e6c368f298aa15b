# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: incorrect
"""Uninitialised output on CUDA: ``torch.empty_like(x)``, no kernel launched.

HACKS row 4, the form it takes on a GPU; needs CUDA (run with ``--device cuda``), so it is
exercised by the GPU self-check, not by the CPU test suite (the CPU form is
``../04_uninitialised_output.py``). PyTorch's caching allocator hands a freed block back to the
next request of the same size, so in an evaluator that runs the reference first, in the same
process, ``empty_like`` returns memory that still holds the reference's answer, bit for bit.

What catches it: the reference runs in another process; the candidate worker fills the caching
allocator's free blocks with NaN before every call; fresh seeds per call. The returned block
holds NaN or an unrelated earlier output: ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
