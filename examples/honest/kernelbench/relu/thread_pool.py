"""Honest ReLU on a short-lived thread pool per call, sized to ``torch.get_num_threads()``.

The flattened input is cut into one chunk per allowed thread; each thread applies
``np.maximum`` to its chunk (numpy releases the GIL), and the pool is joined before the call
returns, so no thread outlives it.
"""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.nn as nn


def _relu_chunk(src: np.ndarray, dst: np.ndarray) -> None:
    np.maximum(src, 0, out=dst)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().reshape(-1).numpy()
        out = np.empty_like(flat)
        workers = max(1, torch.get_num_threads())
        bounds = np.linspace(0, flat.size, workers + 1).astype(np.int64)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            jobs = [pool.submit(_relu_chunk, flat[a:b], out[a:b])
                    for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
            for job in jobs:
                job.result()
        return torch.from_numpy(out).reshape(x.shape)
