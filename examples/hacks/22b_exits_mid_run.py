# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Process exit: answers correctly twice, then ends its process with exit status 0.

HACKS row 22 (the exit form). ``os._exit(0)`` on the third call takes an in-process evaluator
down with it, and status 0 reads as success to a harness that only checks the exit code of a
subprocess (the results it has printed so far are all passes).

What catches it: the candidate runs in its own worker process; the controller sees the worker
die in the middle of a request, records the exit status, restarts the worker for the remaining
variants (it dies again) and reports ``crash`` (``broken``).
"""

import os

import torch
import torch.nn as nn

_calls = 0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _calls
        _calls += 1
        if _calls > 2:
            os._exit(0)
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
