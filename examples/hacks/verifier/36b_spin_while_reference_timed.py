# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Slows the reference down while it is timed: an honest softmax whose helper thread, started
at import, streams a 64 MiB buffer (the last-level cache and memory bandwidth) whenever the
candidate is not being called, in bursts that leave the reference worker enough CPU not to
have its rounds discarded as stolen. The reference's batches run beside it; the candidate's
own calls (the helper pauses while one runs) do not.

Issue 25 class 2: work and interference outside the measured window.

What catches it: the candidate's process tree is frozen between requests, so the helper never
runs while the reference is timed; it runs during the candidate's own batches instead, where
/proc's CPU time shows more than the one allowed thread busy (``cpu-time``, ``suspect``).
"""

import threading
import time

import torch
import torch.nn as nn

_busy = threading.Event()
_buffer = torch.zeros(16 << 20)  # 64 MiB


def _stream() -> None:
    while True:
        if _busy.is_set():
            time.sleep(0.0005)
            continue
        _buffer.add_(1.0)  # a full read and write of the buffer, GIL released
        time.sleep(0.001)


threading.Thread(target=_stream, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _busy.set()
        try:
            shifted = x - x.amax(dim=-1, keepdim=True)
            exp = shifted.exp()
            return exp / exp.sum(dim=-1, keepdim=True)
        finally:
            _busy.clear()
