# kernelproof-reference: .
# kernelproof-expect: verified
"""An honest GPU MODE submission: pairwise summation in float64, returned as float32."""

import torch


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    return data.to(torch.float64).sum().to(torch.float32)
