# kernelproof-reference: rowsum/reference.py
# kernelproof-expect: incorrect
"""A tiled row sum whose per-tile partial sums are never combined: every tile writes its
partial into the same output slot, so the last tile's wins.

Tiles hold 2048 elements, so the benchmark's rows (1000) and their double (2000) fit in one
tile and the answer is right; from 4x (4000) a row spans two tiles and the sum is wrong.
Caught by the 4x/8x and past-16-bit shape variants.
"""

import torch
import torch.nn as nn

#: Elements per tile: above twice the benchmark's row, below four times it.
TILE = 2048


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        pad = (-rows.shape[-1]) % TILE
        tiles = torch.nn.functional.pad(rows, (0, pad)).reshape(rows.shape[0], -1, TILE)
        partials = tiles @ torch.ones(TILE, dtype=x.dtype, device=x.device)
        out = torch.empty(rows.shape[0], dtype=x.dtype, device=x.device)
        for tile in range(partials.shape[1]):
            out.copy_(partials[:, tile])  # should accumulate: out += partials[:, tile]
        return out.reshape(x.shape[:-1])
