# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""HACKS row 6 on CUDA: the work runs on a side stream and forward returns before it ends.

A timer that records events on the current stream only sees the launch, not the work, and
reports a huge speedup. kernelproof's timer synchronizes the whole device before its end event,
so the time is honest; the stability probe snapshots the output before synchronizing and sees
it change afterwards.
"""

import torch
import torch.nn as nn

_side = None


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _side
        if _side is None:
            _side = torch.cuda.Stream()
        out = torch.empty_like(x)
        _side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_side):
            # The answer lands late: on an H200 twenty back-to-back copies of it (this
            # example's first form) had written the final values before forward returned.
            torch.cuda._sleep(2_000_000)  # about a millisecond of GPU cycles
            out.copy_(torch.softmax(x, -1))
        return out
