"""Embedding lookup: rows of a (num_embeddings, embedding_dim) table gathered by (batch_size, seq_len) token ids.

Memory-bound: no arithmetic at all; each output row is a copy of a table row, so the cost is bytes moved.
"""

import torch
import torch.nn as nn

batch_size = 16
seq_len = 512
num_embeddings = 8192
embedding_dim = 512
# default forward: ~3.5 ms on the 2-vCPU dev machine

#: A one-row table and one token, odd/prime vocabularies and widths, and a wider table.
SHAPES = [
    dict(batch_size=1, seq_len=1, num_embeddings=1, embedding_dim=1),
    dict(batch_size=3, seq_len=7, num_embeddings=11, embedding_dim=5),
    dict(batch_size=5, seq_len=127, num_embeddings=50021, embedding_dim=67),
    dict(batch_size=4, seq_len=1024, num_embeddings=4096, embedding_dim=1024),
]


class Model(nn.Module):
    """``nn.Embedding(num_embeddings, embedding_dim)`` with its default N(0, 1) table."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        return self.embedding(token_ids)


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
