# kernelproof-reference: ../../coverage/rowsum/reference.py
# kernelproof-expect: incorrect
"""A row sum by segment ids: every element's row is computed as ``floor(position / row)`` in
float32 (a cheap "fused" index) and the elements are scattered into their rows. float32 holds
every integer up to 2**24 exactly, so the matrix's inputs (all below 2**24 elements) sum right;
past 2**24 elements positions round, and elements near a row's end land in the next row.

HACKS row 39. What catches it: a shape variant whose largest tensor passes 2**24 elements (one
knob grown, the others as small as the budget needs): ``correctness``, ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        n, length = rows.shape
        positions = torch.arange(n * length, dtype=torch.float32, device=x.device)
        row_of = torch.floor(positions / length).to(torch.int64).clamp_(0, n - 1)
        out = torch.zeros(n, dtype=x.dtype, device=x.device)
        out.index_add_(0, row_of, rows.reshape(-1))
        return out.reshape(x.shape[:-1])
