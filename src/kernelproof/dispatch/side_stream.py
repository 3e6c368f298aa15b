"""Shadow checks on a CUDA side stream, judged once they have finished.

The hot path must not wait for the reference: the candidate runs on the caller's stream and
its output is returned at once, while the saved inputs' comparison, the reference and its
float64 oracle are queued on a side stream (:meth:`ShadowCheck.start` with a stream). A check
is judged on the host (:meth:`ShadowCheck.finish`) at a later call, once its event says the
side stream got there, or when the guard is flushed.

The price of not waiting: the mismatching call's own output has already been returned when
the mismatch is seen, so on CUDA a rollback takes effect from the next call judged after it
(on CPU the check is synchronous and the caller gets the reference's answer instead).

Untested on this project's CI (no GPU); ``scripts/gpu_selfcheck.py`` exercises it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import torch

from kernelproof.dispatch.shadow import ShadowCall

#: Checks queued at most. A further sampled call first waits for the oldest, so a reference
#: slower than the candidate cannot pile up saved inputs without bound.
MAX_PENDING_CHECKS = 8


@dataclass
class PendingCheck:
    """A started check waiting for its side stream, with what the incident will need."""

    call: ShadowCall
    index: int
    args_signature: Any
    knobs: dict[str, int]


class SideStreamQueue:
    """The side stream of one device and the checks queued on it, oldest first."""

    def __init__(self, device: torch.device) -> None:
        self.stream = torch.cuda.Stream(device=device)
        self.pending: deque[PendingCheck] = deque()

    def submit(self, check: PendingCheck) -> list[PendingCheck]:
        """Queue a started check; return the ones the caller must judge now (the oldest, when
        the queue was full)."""
        overflow = []
        while len(self.pending) >= MAX_PENDING_CHECKS:
            oldest = self.pending.popleft()
            oldest.call.done.synchronize()
            overflow.append(oldest)
        self.pending.append(check)
        return overflow

    def ready(self, wait: bool = False) -> list[PendingCheck]:
        """Checks whose side-stream work has finished (all of them, waiting, when ``wait``)."""
        finished = []
        while self.pending and (wait or self.pending[0].call.done.query()):
            check = self.pending.popleft()
            check.call.done.synchronize()
            finished.append(check)
        return finished

    def judging(self) -> Any:
        """The context a finished check is judged in: its comparison kernels go on the side
        stream too, not on the caller's."""
        return torch.cuda.stream(self.stream)

    def hand_back(self, output: Any) -> Any:
        """An output made on the side stream, made safe to use on the caller's stream."""
        current = torch.cuda.current_stream(self.stream.device)
        current.wait_stream(self.stream)
        for value in output if isinstance(output, (tuple, list)) else [output]:
            if isinstance(value, torch.Tensor) and value.is_cuda:
                value.record_stream(current)
        return output
