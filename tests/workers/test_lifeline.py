"""A candidate dies with the process that verifies it, whatever entry point that is: ``kill -9``
of a ``kernelproof verify`` leaves no spinning candidate behind (the parent-death signal on
the worker and on its sandbox's init; issue 27)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _working_beneath(folder: Path) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.startswith(str(folder) + "/"):
                found.append(int(entry))
    return found


def test_a_hanging_candidate_dies_with_a_killed_verify(tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    log = (tmp_path / "verify.log").open("w")
    controller = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernelproof.cli",
            "verify",
            "examples/softmax/reference.py",
            "examples/broken/hangs.py",
            "--no-timing",
            "--seeds",
            "1",
        ],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 180
        while len(_working_beneath(scratch)) < 2:  # the reference's and the candidate's
            assert controller.poll() is None, (
                "verify ended before its candidate hung:\n"
                + (tmp_path / "verify.log").read_text()[-3000:]
            )
            assert time.monotonic() < deadline, "the candidate never started"
            time.sleep(0.2)
        time.sleep(2)  # the candidate is now spinning in forward
        controller.send_signal(signal.SIGKILL)
        controller.wait()
        deadline = time.monotonic() + 15
        while _working_beneath(scratch):
            assert time.monotonic() < deadline, (
                f"processes {_working_beneath(scratch)} outlived the killed verify"
            )
            time.sleep(0.2)
    finally:
        if controller.poll() is None:
            controller.kill()
        for pid in _working_beneath(scratch):
            os.kill(pid, signal.SIGKILL)
        log.close()
