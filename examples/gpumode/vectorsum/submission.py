# kernelproof-reference: .
# kernelproof-expect: verified
"""An honest GPU MODE submission: a numba kernel with compensated (Kahan) summation."""

import numba
import numpy as np
import torch


@numba.njit(cache=False)
def _kahan_sum(values: np.ndarray) -> float:
    total = 0.0
    compensation = 0.0
    for value in values:
        corrected = value - compensation
        running = total + corrected
        compensation = (running - total) - corrected
        total = running
    return total


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    flat = data.contiguous().view(-1).numpy().astype(np.float64)
    return torch.tensor(_kahan_sum(flat), dtype=torch.float32)
