# kernelproof-reference: .
# kernelproof-expect: verified
"""An honest submission in GPU MODE's layout: a pairwise sum in float64, rounded once."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    return data.to(torch.float64).sum().to(data.dtype)
