# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Returns a tensor subclass that computes half of its rows later: while timed, each call
computes the first half of the rows and returns a subclass whose ``__torch_function__``
computes the rest the first time the harness touches it after the clock stopped (detaching it,
converting it to a plain tensor to send it). The timed calls take half the true time, and the
outputs the controller fetches are complete.

Issue 25 class 2: "a returned object can also defer work". The matrix checked every output's
exact type, but timed calls were not checked at all.

It tells timed calls apart as 36 does (profiler off, one thread, three calls in a row).

What catches it: every output of every timed call must be exactly ``torch.Tensor`` (with
storage, not meta or lazy) the moment its clock stops, checked with ``type()``, which no
subclass method intercepts (``output-type``, ``suspect``).
"""

import torch
import torch.nn as nn
from torch.autograd import profiler

_streak = [0]


def _rows(x: torch.Tensor, out: torch.Tensor) -> None:
    shifted = x - x.amax(dim=-1, keepdim=True)
    exp = shifted.exp()
    torch.div(exp, exp.sum(dim=-1, keepdim=True), out=out)


class Deferred(torch.Tensor):
    """Finishes its own values on first use."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            for arg in args:
                pending = getattr(arg, "_pending", None) if isinstance(arg, Deferred) else None
                if pending is not None:
                    arg._pending = None
                    _rows(*pending)
            return func(*args, **(kwargs or {}))


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
            _rows(rows, flat)
            return out
        half = rows.shape[0] // 2
        _rows(rows[:half], flat[:half])
        deferred = out.as_subclass(Deferred)
        deferred._pending = (rows[half:], flat[half:])
        return deferred
