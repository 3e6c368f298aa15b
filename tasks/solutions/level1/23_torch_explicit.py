"""Honest PyTorch rewrite of causal attention: scores, mask, softmax and weighted sum spelled out.

``Q K^T / sqrt(d)`` by ``matmul``, the strictly upper triangle filled with -inf, ``softmax`` over
keys, then ``matmul`` with V. The reference's fused ``scaled_dot_product_attention`` kernel is
never called. The scale is split as its square root over Q and K before the product (two
multiplies over L*d elements instead of one over L*L), as PyTorch's own math path does: scaling
only Q let the products overflow to Inf on inputs near float32's largest value, where the
reference stays finite (kernelproof's largest-finite value variant found it).
"""

import math

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        root_scale = 1.0 / math.sqrt(math.sqrt(q.shape[-1]))
        scores = torch.matmul(q * root_scale, (k * root_scale).transpose(-2, -1))
        query_len, key_len = q.shape[-2], k.shape[-2]
        future = torch.ones(query_len, key_len, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)
