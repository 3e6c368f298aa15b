"""BERT-style input embedding: token embedding lookup, plus a learned position embedding, then
LayerNorm, for token ids of shape (batch_size, seq_len) into hidden-size vectors.

Memory-bound: a gather of one table row per token plus about 10 FLOPs per output element; the
bytes moved (gathered rows, position rows, output) dominate, and eager PyTorch adds two
temporaries.
"""

import torch
import torch.nn as nn

# default forward: ~2 ms on the 2-vCPU dev machine
batch_size = 16
seq_len = 128
hidden = 512
vocab_size = 8000

#: Knob settings worth testing besides the default: one token, odd and prime sizes, larger.
SHAPES = [
    dict(batch_size=1, seq_len=1, hidden=1, vocab_size=1),
    dict(batch_size=3, seq_len=7, hidden=33, vocab_size=11),
    dict(batch_size=2, seq_len=61, hidden=127, vocab_size=1009),
    dict(batch_size=32, seq_len=256, hidden=512, vocab_size=8000),
]


class Model(nn.Module):
    """``LayerNorm(token_embedding[ids] + position_embedding[arange(seq_len)])``."""

    def __init__(self, vocab_size: int, max_positions: int, hidden: int, eps: float = 1e-12):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, hidden)
        self.position_embedding = nn.Embedding(max_positions, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[-1], device=ids.device)
        return self.norm(self.token_embedding(ids) + self.position_embedding(positions))


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab_size, seq_len, hidden]
