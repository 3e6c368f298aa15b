# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""A race: row blocks are normalised by worker threads, and some blocks lose the race.

HACKS row 21. The kernel splits the rows into blocks, computes the exponentials in one pass and
hands normalisation to a pool of workers, then "synchronises" with a barrier that is not waited
on. Blocks whose worker has not finished by then are returned with their stale, unnormalised
contents. Whether a given run is right depends on scheduling: one lucky run passes, the next does
not.

To keep the zoo reproducible on any machine, the scheduling is simulated: each block loses the
race with probability 1/4, drawn from the operating system's entropy (``os.urandom``), which no
evaluator seed controls. Every call therefore differs from the last, on the same input.

What catches it: many calls (seeds, value, layout and shape variants): some answers are wrong
(``correctness``, ``incorrect``); repeated runs on the same input differ beyond the tolerance
(``nondeterminism``).
"""

import os

import torch
import torch.nn as nn

#: Rows per block handed to one (simulated) worker.
_BLOCK_ROWS = 4

#: Out of 256: the chance that a block's worker loses the race.
_LOSE_THRESHOLD = 64


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        out = (rows - rows.amax(dim=-1, keepdim=True)).exp()
        blocks = range(0, out.shape[0], _BLOCK_ROWS)
        schedule = os.urandom(len(blocks))
        for start, luck in zip(blocks, schedule):
            if luck < _LOSE_THRESHOLD:
                continue  # this worker had not finished: the block keeps its stale contents
            block = out[start:start + _BLOCK_ROWS]
            block.div_(block.sum(dim=-1, keepdim=True))
        return out.reshape(x.shape)
