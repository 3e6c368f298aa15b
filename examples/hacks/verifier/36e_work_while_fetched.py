# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Does its deferred work inside the request that fetches its outputs: frozen between requests,
it waits to be thawed by the next one. While timed, each call computes half of the rows and
returns; once the batch's calls are over, a helper thread computes every pending half in one
numba call compiled without ``nogil``. It holds the GIL throughout, so the harness's fetch of
the outputs (the next request, when the round is verified) waits for it and sends finished
outputs. No timed batch holds the work, and the candidate never ran while frozen.

Issue 25 class 2, read as an attacker: "the candidate cannot run while it is not being asked"
covers frozen intervals, but a fetch is a request too.

It tells timed calls apart as 36 does (profiler off, one thread, three calls in a row).

What catches it: the controller accounts the CPU time of the fetches too, not only of the
timed batches. The harness answers a fetch on its main thread, at one thread; CPU time of the
candidate's other threads and processes during its fetches (beyond the reference's, over 1 ms
a fetch in most rounds) is work done outside the timed calls (``untimed-work``, ``suspect``).
When the round is not verified, the helper works in the next batch instead, holding the GIL
against the timed calls: its speedup only shrinks.
"""

import queue
import threading
import time

import numba
import numpy as np
import torch
import torch.nn as nn
from torch.autograd import profiler

_pending: "queue.Queue[tuple[np.ndarray, np.ndarray]]" = queue.Queue()
_streak = [0]
_last_call = [0.0]


@numba.njit("void(float32[:, ::1], float32[:, ::1])", cache=False)  # holds the GIL
def _softmax_rows(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.shape[0]):
        peak = -np.inf
        for j in range(x.shape[1]):
            peak = max(peak, x[i, j])
        total = 0.0
        for j in range(x.shape[1]):
            out[i, j] = np.exp(x[i, j] - peak)
            total += out[i, j]
        for j in range(x.shape[1]):
            out[i, j] /= total


def _finisher() -> None:
    while True:
        # Wait until the batch is over and a later request thawed the process.
        if _pending.empty() or time.monotonic() - _last_call[0] < 0.02:
            time.sleep(0.001)
            continue
        jobs = []
        while not _pending.empty():
            jobs.append(_pending.get())
        sources = np.concatenate([source for source, _ in jobs])
        results = np.empty_like(sources)
        _softmax_rows(sources, results)  # one GIL-holding call: the fetch waits for it
        start = 0
        for source, target in jobs:
            target[:] = results[start:start + len(source)]
            start += len(source)


threading.Thread(target=_finisher, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        timed = not profiler._is_profiler_enabled and torch.get_num_threads() == 1
        _streak[0] = _streak[0] + 1 if timed else 0
        _last_call[0] = time.monotonic()
        rows = x.detach().reshape(-1, x.shape[-1]).contiguous().to(torch.float32)
        out = torch.empty_like(rows)
        source, target = rows.numpy(), out.numpy()
        if _streak[0] < 3 or rows.shape[0] < 2:
            _softmax_rows(source, target)
            return out.view(x.shape)
        half = rows.shape[0] // 2
        _softmax_rows(source[:half], target[:half])
        _pending.put((source[half:], target[half:]))
        return out.view(x.shape)
