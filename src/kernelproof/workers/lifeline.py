"""A process that dies with its parent: the kernel's parent-death signal (Linux ``prctl``).

The reference and candidate workers are forked by the forkserver, which exits when the
process that started it (``verify``, a server's worker) dies; each sandbox's init is forked by
its worker. With the parent-death signal on both, a controller that is killed outright
(``kill -9``, the OOM killer) takes its hanging candidates with it: the worker dies with the
forkserver, the sandbox's init with the worker, and every process of the sandbox's pid
namespace with its init.
"""

from __future__ import annotations

import ctypes
import os
import signal

__all__ = ["die_with_parent"]

#: ``PR_SET_PDEATHSIG`` from <linux/prctl.h>.
PR_SET_PDEATHSIG = 1


def die_with_parent() -> bool:
    """Have the kernel SIGKILL this process when its parent exits. ``False`` where the kernel
    has no such thing; exits at once when the parent is already gone (it died before the
    signal was set, and nothing would deliver it now)."""
    parent = os.getppid()
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            return False
    except (AttributeError, OSError):
        return False
    if os.getppid() != parent:
        os._exit(1)
    return True
