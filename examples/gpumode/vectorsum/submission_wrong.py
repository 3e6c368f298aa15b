# kernelproof-reference: .
# kernelproof-expect: incorrect
"""A wrong GPU MODE submission: skips the tail that does not fill a block of 1024."""

import torch


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    full = (data.numel() // 1024) * 1024
    return data[:full].sum()
