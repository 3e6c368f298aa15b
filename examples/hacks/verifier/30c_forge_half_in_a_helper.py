# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Attack 30b, moved off the rule that charged it: each per-call time it reports is cut to 55%,
and the softmax runs on a helper thread the call waits for, so that its main thread sleeps
through the work and its CPU time outside the reported calls looks like the reference's.

HACKS row 30, read against the main-thread CPU rule (``untimed_cpu_s``): the main thread's CPU
outside the calls is only one bound. The other counts every thread: at the timed thread count
(one on CPU) no process of the worker may run for longer than the calls it reported, so the
helper's CPU beyond the 55% is outside them all the same. A pool joined inside the call is no
helper of its own to the ``cpu-time`` rule (one thread busy at a time), so that rule stays
silent.

What catches it: the op audit sees a call that produced outputs with no work recorded (the
helper is a thread its profiler does not follow: ``op-audit-contradiction``, ``suspect``).
Without that rule (a numba kernel on the helper, which the audit records), the every-thread
bound still charges the excess to its calls (``untimed-work``, ``info``), or on a machine too
busy to tell, its speedup is void (not comparable); ``tests/timing/test_evidence.py`` holds
that case.
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
