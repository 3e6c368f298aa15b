"""A small decoder with a generation loop: the host that will run an RMSNorm kernel.

Pre-norm residual blocks (RMSNorm, causal attention with a key/value cache, an MLP) and a
final norm. ``forward(x, cache_k, cache_v)`` takes the new positions' embeddings and the cache
of earlier positions, and returns the new hidden states with the grown cache.

``soak_steps`` is its generation loop: a prompt first, then one position per step whose
embedding is the previous position's output added to the running residual stream (a
continuous autoregression, as in decoders over embeddings); the cache grows by one position a
step. Errors made at one step stay in the cache and in the stream, so they can compound.
"""

import math

import torch
import torch.nn as nn

batch_size = 2
prompt_len = 8
hidden = 64
_LAYERS = 2  # not a knob: the matrix varies sizes, not depth
heads = 4


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.attn_norm = RMSNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.mlp_norm = RMSNorm(hidden)
        self.up = nn.Linear(hidden, 4 * hidden)
        self.down = nn.Linear(4 * hidden, hidden)

    def forward(self, x, cache_k, cache_v):
        b, t, d = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).chunk(3, dim=-1)
        k = torch.cat([cache_k, k], dim=1)
        v = torch.cat([cache_v, v], dim=1)
        split = lambda z: z.view(b, z.shape[1], self.heads, d // self.heads).transpose(1, 2)
        scores = split(q) @ split(k).transpose(-1, -2) / math.sqrt(d // self.heads)
        past = k.shape[1] - t
        mask = torch.ones(t, k.shape[1], dtype=torch.bool, device=x.device).tril(past)
        attention = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ split(v)
        x = x + self.proj(attention.transpose(1, 2).reshape(b, t, d))
        x = x + self.down(torch.nn.functional.gelu(self.up(self.mlp_norm(x))))
        return x, k, v


class Model(nn.Module):
    def __init__(self, hidden: int, layers: int, heads: int):
        super().__init__()
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.norm = RMSNorm(hidden)

    def forward(self, x, cache_k, cache_v):
        """x: (batch, new positions, hidden); caches: (layers, batch, past positions, hidden)."""
        keys, values = [], []
        for index, block in enumerate(self.blocks):
            x, k, v = block(x, cache_k[index], cache_v[index])
            keys.append(k)
            values.append(v)
        return self.norm(x), torch.stack(keys), torch.stack(values)


def get_inputs():
    empty = torch.zeros(_LAYERS, batch_size, 0, hidden)
    return [torch.randn(batch_size, prompt_len, hidden), empty, empty.clone()]


def get_init_inputs():
    return [hidden, _LAYERS, heads]


def soak_steps(model, inputs):
    """The generation loop: the prompt, then one position per step fed from the last output."""
    x, cache_k, cache_v = inputs
    stream = x[:, -1:]
    out, cache_k, cache_v = (yield [x, cache_k, cache_v])[:3]
    while True:
        stream = stream + 0.5 * out[:, -1:]
        out, cache_k, cache_v = (yield [stream, cache_k, cache_v])[:3]
