# kernelproof-reference: reference.py
# kernelproof-expect: verified
"""Honest: a short-lived thread pool per call, sized to ``torch.get_num_threads()``; each
thread sums a block of rows (as matrix-vector products) and the pool is joined before the call
returns. At one allowed thread the work runs on one pool thread while the caller sleeps in
``join``: one core in use, none of it on the main thread.

Issue 25 class 5: ``suspect`` ("CPU off the main thread", at 1.00 cores).
"""

from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn as nn


def _block(x: torch.Tensor, ones: torch.Tensor, out: torch.Tensor, start: int, stop: int) -> None:
    torch.mv(x[start:stop], ones, out=out[start:stop])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        workers = max(1, torch.get_num_threads())
        rows = x.shape[0]
        ones = torch.full((x.shape[1],), 1.75, dtype=x.dtype, device=x.device)
        out = torch.empty(rows, dtype=x.dtype, device=x.device)
        step = -(-rows // workers)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            jobs = [pool.submit(_block, x, ones, out, start, min(rows, start + step))
                    for start in range(0, rows, step)]
            for job in jobs:
                job.result()
        return out
