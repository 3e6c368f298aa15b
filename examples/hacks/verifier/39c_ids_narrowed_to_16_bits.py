# kernelproof-reference: ../../../tasks/level1/24_Embedding.py
# kernelproof-expect: incorrect
"""An embedding lookup that packs its token ids into 16 bits, as a kernel that halves its id
traffic with a uint16 buffer would: right for every table under 65,536 rows, wrong rows past
it (ids wrap modulo 2**16). Current LLM vocabularies hold 128k ids and more.

The task's declared vocabularies stop at 50,021 and its generated ones at 8x the default
(65,536); the one variant past 16 bits (2 * 2**16 + 1 rows at the default width of 512) needs
256 MiB for its table, over the per-call budget, so it was skipped.

HACKS row 39. What catches it: a knob's past-16-bit variant is fitted to the budget by shrinking
the task's other knobs (here the width), never dropped: ``correctness``, ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        packed = token_ids.to(torch.uint16).to(torch.int64)  # the 16-bit id buffer
        return self.embedding.weight[packed]
