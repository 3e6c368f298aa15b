# kernelproof-reference: ../../../tasks/level1/1_Square_matmul.py
# kernelproof-expect: suspect
"""Passes the reference's library call through under another op name: ``torch.einsum`` for a
matmul lowers to the same BLAS GEMM as ``torch.matmul``, while the op names differ
(``aten::bmm`` against ``aten::mm``).

HACKS row 32. An op audit that compares aten op names only calls this "a pure PyTorch rewrite".

What catches it: the op audit compares the library kernels the ops end in, not their names:
both run the GEMM family, so the candidate passed the reference's work through
(``passthrough``, ``suspect``).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.einsum("ik,kj->ij", A, B)
