"""The op recorder sees custom kernels a call runs on threads it starts (issue 25 class 5: a
per-call pool's numba kernel was a "dead kernel"), and leaves those threads unhooked after."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from kernelproof.checks.op_recorder import OpRecorder


@numba.njit(cache=False)
def _double(a: np.ndarray, out: np.ndarray) -> None:
    for i in range(a.shape[0]):
        out[i] = a[i] * 2


def test_a_kernel_run_on_a_pool_thread_the_call_started_is_recorded():
    a, out = np.ones(8), np.zeros(8)
    _double(a, out)  # compiled outside the recorded call
    with OpRecorder() as recorder, ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_double, a, out).result()
    assert recorder.custom.get("numba:_double") == 1, recorder.summary()


def test_a_thread_that_outlives_the_call_drops_its_hook():
    go, done = threading.Event(), threading.Event()
    hooks: list[object] = []

    def later() -> None:
        go.wait()
        len("a call after the recorded one")  # the hook's first event removes it
        hooks.append(sys.getprofile())
        done.set()

    with OpRecorder():
        thread = threading.Thread(target=later)
        thread.start()
    go.set()
    done.wait(5)
    thread.join(5)
    assert hooks == [None]
