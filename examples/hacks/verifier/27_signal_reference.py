# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Signals its siblings: on every call, stops every other process it can see for a moment, so
that the reference worker (timed in turn with it) looks slow; it could as well kill it.

HACKS row 27. Without a sandbox, the reference worker is a sibling under the same user: its pid
is in /proc, and SIGSTOP during its timed batch multiplies its times.

What catches it: the candidate worker's pid namespace. /proc lists only the sandbox's own
processes, no pid outside can be named, and Landlock refuses signals to anything outside its
domain. The reference's CPU time is also read from /proc for every batch: a round in which it got
too little CPU is discarded. The attack gains nothing: the candidate computes an honest softmax
and is verified at its true speed.
"""

import os
import signal

import torch
import torch.nn as nn

_REACHED: list[int] = []


def _stop_everyone() -> None:
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (me, 1):
            try:
                os.kill(int(entry), signal.SIGSTOP)
                _REACHED.append(int(entry))
            except OSError:
                pass


def _resume_everyone() -> None:
    for pid in _REACHED:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Resume the ones stopped last time (the reference's batch has ended by now), then stop
        # them again: they stay stopped while the reference is timed.
        _resume_everyone()
        _stop_everyone()
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
