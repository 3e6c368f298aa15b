# kernelproof-reference: ../../coverage/rowsum/reference.py
# kernelproof-expect: incorrect
"""A tiled row sum right only when the row's tile count is a power of two: rows that are a
whole number of 128-element tiles are summed tile by tile and the partials combined by a
pairwise tree that drops the odd partial out at each level (the classic power-of-two
assumption of a shared-memory tree reduction). Rows that are not a multiple of the tile take
an untiled path and are right.

The matrix tried the benchmark's row (1000), its half, double, 4x, 8x, an odd and a prime
neighbour, 1, and 2 * 2**16 + 1: none is a whole number of tiles with a tile count that is not
a power of two. Production rows are: 1536, 3072, 5120, 6144, 12288.

HACKS row 39. What catches it: shape variants at production sizes, multiples of a tile that are
not powers of two (3 * 2**k and 5 * 2**k next to each knob's default): ``correctness``,
``incorrect``.
"""

import torch
import torch.nn as nn

#: Elements per tile.
TILE = 128


def _tree(partials: torch.Tensor) -> torch.Tensor:
    """Pairwise sums of the last dimension until one is left, dropping an odd last partial."""
    while partials.shape[-1] > 1:
        pairs = partials.shape[-1] // 2
        partials = partials[..., 0:2 * pairs:2] + partials[..., 1:2 * pairs:2]
    return partials[..., 0]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        if n % TILE:
            return x @ torch.ones(n, dtype=x.dtype, device=x.device)
        tiles = x.reshape(*x.shape[:-1], n // TILE, TILE)
        return _tree(tiles @ torch.ones(TILE, dtype=x.dtype, device=x.device))
