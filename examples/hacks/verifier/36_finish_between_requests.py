# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Finishes its outputs between requests: while timed, each call computes half of the rows and
returns; a helper thread computes the other half once the batch is over, while the controller
times the reference and before it fetches the outputs to verify them. The timed calls take half
the true time, the outputs are complete when fetched.

Issue 25 class 2. CPU time was read from /proc only around the candidate's own batches, so work
done between requests was on nobody's clock.

It tells timed calls apart by what the matrix rarely shows: profiler off and one thread, three
calls in a row (a timed batch's calls; the matrix runs at every core and repeats one cell at
one thread).

What catches it: the candidate's whole process tree is frozen (SIGSTOP) between requests, so
the helper gets no CPU until the next request thaws it: it then races the fetch (an unfinished
output is ``incorrect``) or runs during the next batch beside the main thread, which /proc's
CPU time shows as more than the one allowed thread (``cpu-time``, ``suspect``). Had it run
while frozen, the CPU time of the frozen interval would be ``ran-while-frozen``.
"""

import queue
import threading

import torch
import torch.nn as nn
from torch.autograd import profiler

_pending: "queue.Queue[tuple[torch.Tensor, torch.Tensor, int]]" = queue.Queue()
_streak = [0]


def _rows(x: torch.Tensor, out: torch.Tensor, start: int, stop: int) -> None:
    part = x[start:stop]
    shifted = part - part.amax(dim=-1, keepdim=True)
    exp = shifted.exp()
    torch.div(exp, exp.sum(dim=-1, keepdim=True), out=out[start:stop])


def _finisher() -> None:
    while True:
        x, out, half = _pending.get()
        _rows(x, out, half, x.shape[0])


threading.Thread(target=_finisher, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        timed = not profiler._is_profiler_enabled and torch.get_num_threads() == 1
        _streak[0] = _streak[0] + 1 if timed else 0
        out = torch.empty_like(x)
        rows = x.reshape(-1, x.shape[-1])
        flat = out.view(-1, x.shape[-1])
        if _streak[0] < 3 or rows.shape[0] < 2:
            _rows(rows, flat, 0, rows.shape[0])
            return out
        half = rows.shape[0] // 2
        _rows(rows, flat, 0, half)
        _pending.put((rows, flat, half))
        return out
