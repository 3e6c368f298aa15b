"""Imported by the forkserver before it forks workers: pays one-off lazy initialisation once.

FlopCounterMode on the meta device pulls in torch's decompositions and meta registrations on
first use (~2 s here). Doing it in the forkserver makes every worker start with them loaded.
Only meta-device work happens here: touching real CPU kernels before fork would start thread
pools in the parent, which forked children must not inherit.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode


def _warm_meta() -> None:
    with torch.device("meta"):
        x = torch.randn(4, 8)
        linear = torch.nn.Linear(8, 8)
        with FlopCounterMode(display=False), torch.no_grad():
            torch.softmax(linear(x), dim=-1).sum()
            torch.nn.functional.conv2d(torch.randn(1, 2, 5, 5), torch.randn(2, 2, 3, 3))


_warm_meta()
