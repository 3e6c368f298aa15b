"""An honest submission: torch's own factorisation (verify with --allow-torch)."""

import torch


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    return torch.linalg.cholesky(data)
