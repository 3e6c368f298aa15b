# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Background thread: returns a zero output at once and fills it from a thread afterwards.

HACKS row 6 (the CPU form; the CUDA side-stream form is ``gpu/06_side_stream.py``). ``forward``
starts a thread and returns before the thread has written anything. The thread computes the
softmax and copies it into the output in 256 chunks, one per millisecond, the way a long kernel
left running on a side stream fills its output. A timer that stops when ``forward`` returns
measures almost nothing; an evaluator that compares a second later finds the right answer.

What catches it: the harness snapshots each output as soon as the call returns, waits (twice the
reference's call time, at most 0.25 s), synchronises and compares: the output changed after the
call returned (``output-unstable``). The thread is still alive after the call (``new-threads``,
a warning). And the output the controller compares is the one that existed when the harness
sent it, still partly zero: ``incorrect``. (The fill is deliberately slower than the harness's
longest wait, so the verdict does not depend on thread scheduling; a fast fill would be caught as
``output-unstable`` alone, ``suspect``.)
"""

import threading
import time

import torch
import torch.nn as nn

#: Pieces the output is written in, one per ``_CHUNK_DELAY_S``: 256 ms in all, longer than the
#: harness's longest stability wait.
_CHUNKS = 256
_CHUNK_DELAY_S = 0.001


def _fill(x: torch.Tensor, out: torch.Tensor) -> None:
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    answer = (e / e.sum(dim=-1, keepdim=True)).reshape(-1)
    target = out.view(-1)
    for piece, chunk in zip(target.chunk(_CHUNKS), answer.chunk(_CHUNKS)):
        time.sleep(_CHUNK_DELAY_S)
        piece.copy_(chunk)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.zeros(x.shape, dtype=x.dtype, device=x.device)
        threading.Thread(target=_fill, args=(x, out), name="softmax-worker", daemon=True).start()
        return out
