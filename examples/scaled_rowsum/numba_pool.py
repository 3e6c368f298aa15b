# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: a numba row-sum kernel (``nogil``) run by a short-lived thread pool per call, sized
to ``torch.get_num_threads()``, each thread on a block of rows, joined before the call returns.

Issue 25 class 5: ``suspect`` as a "dead kernel" (the op recorder's profile hook did not
follow the pool's threads, so the numba kernel never showed as run) and for "CPU off the main
thread" at 1.00 cores.
"""

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], float32[::1], int64, int64)", nogil=True, cache=False)
def _row_sums(x: np.ndarray, out: np.ndarray, start: int, stop: int) -> None:
    for i in range(start, stop):
        total = np.float32(0.0)
        for j in range(x.shape[1]):
            total += x[i, j]
        out[i] = total * np.float32(1.75)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.shape[0]
        source = x.detach().contiguous().to(torch.float32).numpy()
        out = torch.empty(rows, dtype=torch.float32)
        target = out.numpy()
        workers = max(1, torch.get_num_threads())
        step = -(-rows // workers) if rows else 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            jobs = [pool.submit(_row_sums, source, target, start, min(rows, start + step))
                    for start in range(0, rows, step)]
            for job in jobs:
                job.result()
        return out.to(x.dtype)
