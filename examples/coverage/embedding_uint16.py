# kernelproof-reference: embedding/reference.py
# kernelproof-expect: incorrect
"""An embedding lookup that stores its ids in 16 bits, as a kernel packing ids into uint16
would: right for every vocabulary under 65,536, wrong rows beyond it (ids wrap modulo 2**16).
Caught by the vocabulary variant just past 16 bits."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, vocab_size: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        narrow = ids.to(torch.uint16).to(torch.int64)  # the 16-bit id buffer
        return self.embedding.weight.index_select(0, narrow.reshape(-1)).reshape(
            *ids.shape, -1)
