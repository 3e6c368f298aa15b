# kernelproof-reference: ../../tasks/level1/12_Sum_reduction.py
# kernelproof-expect: incorrect
"""A parallel numba reduction with a data race: every thread adds into one shared accumulator
cell per output, with no atomics, so concurrent updates are lost.

On one thread the race never fires and every answer is right: a verifier that checks
correctness only at one thread (as kernelproof did) calls it verified. At the machine's thread
count, additions are lost and the sums come out short.

What catches it: the correctness matrix runs at the machine's default thread count (a sample
is repeated at one thread), so the lost updates give wrong sums (``correctness``,
``incorrect``).
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(parallel=True, cache=False)
def _sum_middle(x: np.ndarray, out: np.ndarray) -> None:
    batch, rows, cols = x.shape
    for b in range(batch):
        for c in range(cols):
            out[b, c] = 0.0
        # Each thread takes a block of rows and adds its values straight into the shared output
        # row: the read-modify-write of out[b, c] races with the other threads'.
        for r in numba.prange(rows):
            for c in range(cols):
                out[b, c] += x[b, r, c]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        contiguous = x.detach().contiguous()
        out = torch.empty(contiguous.shape[0], contiguous.shape[2], dtype=contiguous.dtype)
        _sum_middle(contiguous.numpy(), out.numpy())
        return out
