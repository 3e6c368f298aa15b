"""Honest numba 1-D average pooling: a float64 prefix sum per row, then one subtraction per window.

Overlapping windows (kernel 8, stride 4 by default) make a direct sum read every input twice or
more; a prefix sum ``P`` reads each input once and each output is ``(P[hi] - P[lo]) / k``. The
prefix is float64, so the subtraction loses nothing a float32 output could show. A NaN or Inf
would poison every later prefix (``inf - inf`` is NaN), so a row holding one is summed window by
window instead, which keeps it local to the windows that contain it. Windows count
the zero padding (``count_include_pad=True``) and, with ``ceil_mode=False``, always lie inside the
padded signal, so the divisor is always ``kernel_size``, as in ``nn.AvgPool1d``. The output length
is ``(length + 2p - k) // stride + 1``.

Compiled eagerly at import for one signature (float32, C-contiguous); a plain numba ``njit``,
no ``parallel=True``: it starts no threads.
"""

import numba
import numpy as np
import torch
import torch.nn as nn


@numba.njit("void(float32[:, ::1], int64, int64, int64, float32[:, ::1])", cache=False)
def _avg_pool_rows(x, kernel_size, stride, padding, out):
    rows, length = x.shape
    outputs = out.shape[1]
    inv = 1.0 / kernel_size
    prefix = np.empty(length + 1, dtype=np.float64)
    for r in range(rows):
        running = 0.0
        prefix[0] = 0.0
        finite = True
        for j in range(length):
            v = np.float64(x[r, j])
            finite = finite and np.isfinite(v)
            running += v
            prefix[j + 1] = running
        for o in range(outputs):
            start = o * stride - padding
            lo = min(max(start, 0), length)
            hi = max(min(start + kernel_size, length), lo)
            if finite:
                total = prefix[hi] - prefix[lo]
            else:
                total = 0.0
                for j in range(lo, hi):
                    total += np.float64(x[r, j])
            out[r, o] = np.float32(total * inv)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype != torch.float32:
            raise TypeError(f"numba AvgPool1d supports float32 only, got {x.dtype}")
        if x.dim() not in (2, 3):
            raise ValueError(f"AvgPool1d expects a 2-D or 3-D input, got {x.dim()}-D")
        k, s, p = self.kernel_size, self.stride, self.kernel_size // 2
        length = x.shape[-1]
        outputs = (length + 2 * p - k) // s + 1
        if outputs < 1:
            raise ValueError(f"the pooled output would be empty (length {length}, kernel {k})")
        rows = x.detach().contiguous().reshape(-1, length).numpy()
        out = np.empty((rows.shape[0], outputs), dtype=np.float32)
        _avg_pool_rows(rows, k, s, p, out)
        return torch.from_numpy(out).reshape(*x.shape[:-1], outputs)
