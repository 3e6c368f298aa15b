# kernelproof-reference: ../../tasks/level1/12_Sum_reduction.py
# kernelproof-expect: incorrect
"""A parallel numba reduction with a data race: each thread copies the shared output, adds its
block of rows into the copy, and writes the copy back. The per-thread partial sums are never
combined, so when two threads' blocks overlap in time, the last writer wins and the other's
rows are lost.

On one thread the race never fires and every answer is right: a verifier that checks
correctness only at one thread (as kernelproof did) calls it verified. At the machine's thread
count, the blocks overlap and the sums come out short. The window is a whole block of rows, not
one read-modify-write, so the race fires whenever two threads run at once, even on a loaded
machine where they only interleave.

What catches it: the correctness matrix runs at the machine's default thread count (a sample
is repeated at one thread), so the lost blocks give wrong sums (``correctness``,
``incorrect``).
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit(parallel=True, cache=False)
def _sum_middle(x: np.ndarray, out: np.ndarray) -> None:
    batch, rows, cols = x.shape
    out[:] = 0.0
    blocks = numba.get_num_threads()
    for block in numba.prange(blocks):
        start = rows * block // blocks
        stop = rows * (block + 1) // blocks
        # The bug: a private copy of the shared output, written back whole at the end, so a
        # thread that finishes later overwrites what the others added meanwhile.
        partial = out.copy()
        for b in range(batch):
            for r in range(start, stop):
                for c in range(cols):
                    partial[b, c] += x[b, r, c]
        out[:] = partial


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        contiguous = x.detach().contiguous()
        out = torch.empty(contiguous.shape[0], contiguous.shape[2], dtype=contiguous.dtype)
        _sum_middle(contiguous.numpy(), out.numpy())
        return out
