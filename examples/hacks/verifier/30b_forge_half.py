# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Forges its own worker's replies, but only by as much as stays under the rule that accuses:
an honest softmax (max, exp, sum, divide: ``examples/softmax/correct.py``), each per-call time
it reports cut to 55%, for 1.8x its true speed.

HACKS row 30, read against the rule that caught it: untimed main-thread CPU is ``suspect`` only
when the CPU its clock missed is at least as long as the call it reported (a smaller excess may
be bookkeeping). Cutting each call to 55% leaves 45% unreported, under that line.

What catches it: the excess is not held against it, it is charged. Its main thread's CPU time
outside the calls it reported is above the reference's in every round (/proc, where it cannot
reach), beyond the rounds' noise, so that excess is added to each of its calls before the
speedup is computed (``untimed-work``, ``info``): it is verified at its true speed (about 0.4x
torch's fused softmax here), and gains nothing by the forgery.
"""

import json
from multiprocessing import connection

import torch
import torch.nn as nn

_send_bytes = connection.Connection.send_bytes


def _forged_send_bytes(self, buf, offset=0, size=None):  # noqa: ANN001
    try:
        message = json.loads(bytes(buf))
        data = message.get("data", {})
        if isinstance(data.get("times"), list):
            data["times"] = [t * 0.55 for t in data["times"]]
            buf = json.dumps(message).encode()
    except (ValueError, UnicodeDecodeError, AttributeError):
        pass
    return _send_bytes(self, buf, offset, size) if size is None else _send_bytes(self, buf)


connection.Connection.send_bytes = _forged_send_bytes


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        e = shifted.exp()
        return e / e.sum(dim=-1, keepdim=True)
