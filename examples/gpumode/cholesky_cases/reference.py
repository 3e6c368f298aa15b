"""A GPU MODE-format task with input *cases*, shaped like gpu-mode/reference-kernels'
linalg/cholesky_py and sized for a CPU: task.yml's entries carry a string field ``case``
(``spectrum``, ``diagonal``, ``tridiagonal``) besides their sizes, and ``generate_input`` makes a
different matrix of the same shape for each. A verifier that keeps only the integer fields
tests the dense case alone.
"""

import torch


def ref_kernel(data: torch.Tensor) -> torch.Tensor:
    return torch.linalg.cholesky(data)


def generate_input(batch: int, n: int, cond: int, seed: int, case: str = "dense"
                   ) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if case == "dense":
        a = torch.randn(batch, n, n, generator=generator)
        out = a @ a.transpose(-1, -2) / n
        out.diagonal(dim1=-2, dim2=-1).add_(10.0 ** -max(cond, 2) + 1.0)
        return 0.5 * (out + out.transpose(-1, -2))
    if case == "diagonal":
        values = torch.logspace(0.0, -float(max(cond, 1)), n)
        return torch.diag_embed(values.expand(batch, n)).contiguous()
    if case == "spectrum":
        q, _ = torch.linalg.qr(torch.randn(batch, n, n, generator=generator))
        values = torch.logspace(0.0, -float(max(cond, 1)), n).expand(batch, n)
        out = (q * values.unsqueeze(-2)) @ q.transpose(-1, -2)
        return (0.5 * (out + out.transpose(-1, -2))).contiguous()
    if case == "tridiagonal":
        diagonal = torch.empty(batch, n).uniform_(1.5, 2.5, generator=generator)
        off = torch.empty(batch, max(n - 1, 0)).uniform_(-0.25, 0.25, generator=generator)
        return (torch.diag_embed(diagonal) + torch.diag_embed(off, offset=1)
                + torch.diag_embed(off, offset=-1)).contiguous()
    raise ValueError(f"unknown case {case!r}")
