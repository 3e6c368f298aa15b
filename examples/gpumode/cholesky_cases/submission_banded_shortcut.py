"""Wrong on one of the task's cases only: a "fast path" for banded input takes the square root
of the diagonal and drops the off-diagonals, which is right for a diagonal matrix and wrong for
a tridiagonal one. Dense inputs never take it, so a verifier that tests only the dense case
(integer fields of task.yml) calls it verified; the ``case: tridiagonal`` entry catches it."""

import torch


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    n = data.shape[-1]
    band = torch.ones(n, n, dtype=torch.bool).triu(-1).tril(1)
    if n > 2 and bool((data[..., ~band] == 0).all()):
        return torch.diag_embed(data.diagonal(dim1=-2, dim2=-1).sqrt())
    return torch.linalg.cholesky(data)
