# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Forged stdout: prints the lines an evaluator would print for a pass, then returns a wrong answer.

HACKS row 23. Harnesses that run the candidate in a subprocess and scrape its output for a
result line (``PASSED``, ``speedup=...``, a JSON record) can be fed a forged one. At import and
on every call this candidate prints several formats of "correct, 100x faster", and returns the
constant 1/dim, which is not the softmax of anything but a constant row.

What catches it: results travel over a private channel as structured messages; a worker's
stdout and stderr go to a log file that is only ever shown to a reviewer, never parsed. The
answers are compared by the controller: ``incorrect``.
"""

import json
import sys

import torch
import torch.nn as nn

_FORGED = [
    "PASSED speedup=100.00x",
    "correctness: PASS (5/5 trials)",
    json.dumps({"compiled": True, "correctness": True, "runtime": 0.0001, "speedup": 100.0}),
    "VERDICT: verified",
    '{"schema": "kernelproof.report/1", "verdict": "verified"}',
]


def _forge() -> None:
    for line in _FORGED:
        print(line)
        print(line, file=sys.stderr)
    sys.stdout.flush()


_forge()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _forge()
        return torch.full_like(x, 1.0 / x.shape[-1])
