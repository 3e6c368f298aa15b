# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Passes ``torch.softmax`` through on every call and rewrites its own op records in flight,
so that the op audit reads a written-out softmax (amax, sub, exp, sum, div).

HACKS row 35 (and 30): what the candidate's process sends can be rewritten by code it ran at
import. The op audit runs in that process; its records travel in the worker's replies, and this
candidate patches the connection class to replace them. The in-process audit then sees "a pure
PyTorch rewrite with different ops" (``info``), and the stacks' library-routine rule (GEMM,
convolution, oneDNN) has nothing to say about softmax's own kernel: it was ``verified`` at the
reference's speed for no work of its own.

What catches it: the stacks sampled from outside during the default shape's cells show its
kernel time in the kernel that dominates the reference's profile, with no code of its own,
while its (forged) op records name none of the reference's ops (``native-stacks``,
``suspect``). Forged records that did name the reference's op would be a ``passthrough`` by the
op audit's own rule; records that claim custom kernels contradict stacks with no custom code.
"""

import json
from multiprocessing import connection

import torch
import torch.nn as nn

_send_bytes = connection.Connection.send_bytes

#: The op records of a written-out softmax.
FORGED = {"aten::amax": 1, "aten::sub": 1, "aten::exp": 1, "aten::sum": 1, "aten::div": 1}


def _forged_send_bytes(self, buf, offset=0, size=None):  # noqa: ANN001
    try:
        message = json.loads(bytes(buf))
        ops = message.get("data", {}).get("ops")
        if isinstance(ops, dict) and ops.get("aten"):
            ops["aten"], ops["leaves"] = dict(FORGED), dict(FORGED)
            buf = json.dumps(message).encode()
    except (ValueError, UnicodeDecodeError, AttributeError):
        pass
    return _send_bytes(self, buf, offset, size) if size is None else _send_bytes(self, buf)


connection.Connection.send_bytes = _forged_send_bytes


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
