# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Time below the physical floor: reports the result of a call before the work could be done.

HACKS row 24; exercised by the timing tests, not by the CPU correctness suite. The candidate is
right on every call, but it starts computing the *next* answer speculatively in a thread as soon
as it has returned the current one, guessing that a benchmark loop passes the same input again.
When the guess is right (a loop that reuses its input), the next call only hands over the
already-computed tensor and is timed at a few microseconds: less time than it takes to read a
64 x 4096 float32 input and write the output once, at this machine's peak memory bandwidth.

What catches it: the speed-of-light floor. Compulsory bytes (inputs read once, outputs written
once) over the measured peak bandwidth give a minimum time; a candidate timed below it is a
measurement error or a cheat, and the report says so. Fresh inputs for every timed call make the
guess fail here, and the stability probe and thread check see the speculative thread too, so the
correctness verdict is ``verified`` with a ``new-threads`` warning at most.
"""

import threading

import torch
import torch.nn as nn


def _softmax(x: torch.Tensor) -> torch.Tensor:
    e = (x - x.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._speculation: dict = {}

    def _speculate(self, x: torch.Tensor, version: int) -> None:
        self._speculation = {"input": x, "version": version, "out": _softmax(x)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        guess = self._speculation
        if guess.get("input") is x and guess.get("version") == x._version and "out" in guess:
            out = guess["out"]
        else:
            out = _softmax(x)
        thread = threading.Thread(target=self._speculate, args=(x, x._version), daemon=True)
        thread.start()
        return out.clone()
