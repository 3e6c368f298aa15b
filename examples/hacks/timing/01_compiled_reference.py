# kernelproof-reference: ../../rmsnorm/reference.py
# kernelproof-expect: verified
"""Compiled passthrough: ``torch.compile`` of the reference's own code, submitted as a kernel.

HACKS row 1 (the ``torch.compile`` form); exercised by the timing tests, not by the CPU
correctness suite. The forward is the reference's RMSNorm, unchanged, wrapped in
``torch.compile``. Inductor fuses it and it may well beat eager PyTorch, so against an eager
baseline it posts a speedup, but the candidate contributes nothing a one-line
``torch.compile(Model)`` would not.

What catches it: nothing is wrong with the answers, so the correctness verdict is ``verified``
and the op audit reports the compiled code as ``info`` (DESIGN.md, op-audit policy). The timing
phase times a ``torch.compile`` baseline of the reference too; the candidate's speedup against
it is about 1x, which is what a reviewer reads.
"""

import torch
import torch.nn as nn


class _Reference(nn.Module):
    """The reference's RMSNorm, copied verbatim."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(mean_square + self.eps) * self.weight


class ModelNew(_Reference):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__(hidden, eps)
        self._compiled = torch.compile(super().forward, dynamic=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._compiled(x)
