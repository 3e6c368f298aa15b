# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: broken
"""Misbehaving candidate: its forward keeps allocating (a leak, or a kernel sized from the
wrong dimension). The worker's memory watchdog kills it once it passes the limit
(``memory_limit_gib``, 8 GiB by default) and the verdict says so. Under a limit above 3 GiB
it gives up there with a MemoryError instead, so that it never exhausts a small machine."""

import time

import torch
import torch.nn as nn

_hoard: list[torch.Tensor] = []


class ModelNew(nn.Module):
    def forward(self, x):
        while len(_hoard) < 48:
            _hoard.append(torch.ones(16 << 20))  # 64 MiB, written so that it is resident
            time.sleep(0.01)
        raise MemoryError("memory_hog stops at 3 GiB")
