"""RMSNorm that keeps a copy of every input it sees (a debugging history left in): correct
on every call, but its memory grows with each one, which a few matrix calls never notice."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))
        self.history: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # 256 KiB kept per call, padded as a tracing buffer would be.
        self.history.append(torch.empty(64 * 1024).fill_(float(x.shape[-1])))
        return x * torch.rsqrt(torch.linalg.vecdot(x, x).unsqueeze(-1) / x.shape[-1] + self.eps) * self.weight
