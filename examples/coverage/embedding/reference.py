"""Embedding lookup: one row of the table per id. Memory-bound on the rows read.

The default vocabulary (1000) and its 2x, 4x and 8x all sit below 2**16, so a kernel that
narrows its ids to 16 bits is right on every one of them; the past-16-bit vocabulary variant
(2 * 2**16 + 1 rows) has half its ids above 2**16.
"""

import torch
import torch.nn as nn

vocab_size = 1000
embedding_dim = 64
num_ids = 512


class Model(nn.Module):
    """``nn.Embedding`` of ``vocab_size`` rows of ``embedding_dim``."""

    def __init__(self, vocab_size: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(ids)


def get_inputs():
    return [torch.randint(0, vocab_size, (num_ids,))]


def get_init_inputs():
    return [vocab_size, embedding_dim]
