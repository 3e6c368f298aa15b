# kernelproof-reference: .
# kernelproof-expect: verified
"""An honest submission in GPU MODE's layout: it imports the task's types from ``task.py``,
as the published templates do, and sums the two vectors stacked as rows (a PyTorch
rewrite with another op than the reference's ``add``)."""

import torch
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    return torch.stack((a, b)).sum(dim=0)
