"""The thread count a worker's calls run at, set per request.

Correctness runs at the machine's own thread count, the one the kernel meets in production: a
parallel CPU kernel with a data race (numba ``prange`` on a shared accumulator, OpenMP,
``std::thread``) looks right on one thread. Timing runs both sides at one fixed, reported count.
Worker pools are therefore sized to the machine at start, and each request narrows them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def thread_count(threads: int | None) -> Iterator[None]:
    """Run the block with torch's intra-op pool (OpenMP) and numba's pool at ``threads``
    (``None``: leave them as they are), restoring both afterwards."""
    if threads is None:
        yield
        return
    import torch

    numba = sys.modules.get("numba")
    before = torch.get_num_threads()
    numba_before = _numba_threads(numba)
    torch.set_num_threads(threads)
    if numba_before is not None:
        _set_numba_threads(numba, threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
        if numba_before is not None:
            _set_numba_threads(numba, numba_before)


def _numba_threads(numba: object) -> int | None:
    try:
        return int(numba.get_num_threads())  # type: ignore[attr-defined]  # a module, untyped
    except Exception:  # noqa: BLE001 - numba absent, or its threading layer not started
        return None


def _set_numba_threads(numba: object, threads: int) -> None:
    try:
        limit = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]  # idem
        numba.set_num_threads(max(1, min(threads, limit)))  # type: ignore[attr-defined]  # idem
    except Exception:  # noqa: BLE001 - a numba without a threading layer: nothing to narrow
        pass
