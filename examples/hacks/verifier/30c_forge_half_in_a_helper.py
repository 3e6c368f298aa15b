# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Attack 30b, moved off the rule that charged it: each per-call time it reports is cut to 55%,
and the softmax runs on a helper thread the call waits for, so that its main thread sleeps
through the work and its CPU time outside the reported calls looks like the reference's.

HACKS row 30, read against the main-thread CPU rule: the main thread's CPU outside the calls
it reported is what is compared with the reference's, and here the main thread sleeps in
``join`` while the helper works.

What catches it: the op audit sees calls that produced outputs with no work recorded (the
helper is a thread its profiler does not follow: ``op-audit-contradiction``, ``suspect``).
With the work in a numba kernel on the helper (which the audit records), nothing does: every
thread's CPU beyond the allowed threads times the reported calls was tried as a second bound
and dropped, since an honest C++ kernel with its own OpenMP threads trips it (docs/security.md,
"Known limits").
"""

import json
import threading
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


def _softmax(x: torch.Tensor, out: list) -> None:
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = shifted.exp()
    out.append(e / e.sum(dim=-1, keepdim=True))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: list = []
        helper = threading.Thread(target=_softmax, args=(x, out))
        helper.start()
        helper.join()
        return out[0]
