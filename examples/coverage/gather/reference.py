"""Embedding lookup of few ids in a big table: 2048 rows of a 131072 x 64 table (32 MiB).

Every correct algorithm reads the ids and the rows they select and writes the output; none
must read the whole table. A floor that counted the table as compulsory made an honest gather
look faster than light.
"""

import torch
import torch.nn as nn

vocab_size = 131072
embedding_dim = 64
num_ids = 2048


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
