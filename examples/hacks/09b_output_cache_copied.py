# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: incorrect
"""Disguised output cache: replays a copy of the cached answer, so no buffer is shared.

HACKS row 9, disguised. Like ``09_output_cache.py``, but the cache is an attribute of the module
named like a workspace, keyed on a "plan" (shape and dtype), and each call returns a fresh copy
of the remembered answer: the storage-overlap probe has nothing to see, and a copy is still far
cheaper than a softmax.

What catches it: fresh input values on every call. From the second seed on, the copy holds the
answer to a different input: ``incorrect``.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._workspace: dict = {}

    def _plan(self, x: torch.Tensor) -> tuple:
        return (x.dim(), *x.shape, str(x.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        plan = self._plan(x)
        scratch = self._workspace.get(plan)
        if scratch is None:
            e = (x - x.amax(dim=-1, keepdim=True)).exp()
            scratch = self._workspace[plan] = e / e.sum(dim=-1, keepdim=True)
        return scratch.clone()
