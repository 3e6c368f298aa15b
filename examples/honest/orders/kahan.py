# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: Kahan (compensated) summation over 128 interleaved lanes, then a compensated sum of
the lanes: nearly exact, and in an order of its own."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lanes = 128
        dim = x.shape[-1]
        padded = torch.nn.functional.pad(x, (0, (-dim) % lanes))
        chunks = padded.reshape(*x.shape[:-1], -1, lanes)
        total = torch.zeros(chunks.shape[:-2] + (lanes,), dtype=x.dtype, device=x.device)
        carry = torch.zeros_like(total)
        for i in range(chunks.shape[-2]):
            y = chunks[..., i, :] - carry
            t = total + y
            carry = (t - total) - y
            total = t
        result = torch.zeros(total.shape[:-1], dtype=x.dtype, device=x.device)
        comp = torch.zeros_like(result)
        for j in range(lanes):
            y = total[..., j] - comp
            t = result + y
            comp = (t - result) - y
            result = t
        return result * self.scale
