"""The GPU self-check's parts that run without a GPU: it refuses politely where there is no
CUDA device, and its sandbox bisect never touches this machine's own mounts (a first version
masked the host's /tmp, /run and /proc when the namespaces could not be entered)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_selfcheck.py"


def _mounts() -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def _trial(steps: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--sandbox-trial", steps],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout + done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_without_cuda_it_says_so_and_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "no CUDA device" in done.stdout


def test_the_sandbox_bisect_takes_every_step_and_leaves_this_machines_mounts_alone() -> None:
    before = _mounts()
    said = _trial("namespaces,mounts,proc,limits,landlock,caps,seccomp")
    assert "TRIAL CUDA" in said and "missing {}" in said, said
    assert _mounts() == before


def test_the_mount_steps_refuse_to_run_outside_the_namespaces() -> None:
    before = _mounts()
    said = _trial("mounts,proc")
    assert "TRIAL skipped: no namespaces" in said, said
    assert _mounts() == before
