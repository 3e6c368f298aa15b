# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Blinds the in-process op audit: passes the reference's own softmax through on a thread of
its own, which the profiler inside the worker does not follow, so the recorder sees no op at
all and the audit would call it "a rewrite with different ops: " (an empty list).

HACKS row 31. The op audit runs inside the candidate's process, which the candidate owns.

What catches it: a call that produced outputs while the audit recorded no work is a
contradiction (``op-audit-contradiction``, ``suspect``), never an empty rewrite.
"""

import threading

import torch
import torch.nn as nn


def _unprofiled(x: torch.Tensor, box: list) -> None:
    box.append(torch.softmax(x, dim=-1))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        box: list = []
        worker = threading.Thread(target=_unprofiled, args=(x, box))
        worker.start()
        worker.join()
        return box[0]
