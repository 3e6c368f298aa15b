"""The warm verifier: `kernelproof warm` serves `verify` and `audit-task`, survives a candidate that kills its
worker, listens only for this user, and stops on request."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import EXAMPLES

QUICK = ["--no-timing", "--seeds", "2", "--no-shrink", "--seed", "7"]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_the_warm_verifier_serves_verify_and_survives_a_dying_candidate(tmp_path: Path):
    env = {**os.environ, "KERNELPROOF_CACHE_DIR": str(tmp_path / "cache")}
    started = _cli("warm", "--idle-timeout", "300", env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        socket = tmp_path / "cache" / "warm" / f"verifier-{os.getuid()}.sock"
        assert stat.S_IMODE(socket.stat().st_mode) == 0o600
        assert stat.S_IMODE(socket.parent.stat().st_mode) == 0o700

        softmax = EXAMPLES / "softmax"
        dying = _cli(
            "verify",
            str(softmax / "reference.py"),
            str(EXAMPLES / "hacks" / "22b_exits_mid_run.py"),
            *QUICK,
            env=env,
        )
        assert dying.returncode == 3, dying.stdout[-2000:]
        assert "warm verifier" in dying.stderr

        honest = _cli(
            "verify", str(softmax / "reference.py"), str(softmax / "correct.py"), *QUICK, env=env
        )
        assert honest.returncode == 0, honest.stdout[-2000:]
        assert "warm verifier" in honest.stderr

        audit = _cli("audit-task", str(softmax / "reference.py"), "--seeds", "1", env=env)
        assert audit.returncode == 0, audit.stdout[-2000:]
        assert "audited by the warm verifier" in audit.stderr
    finally:
        stopped = _cli("warm", "--stop", env=env)
    assert "stopped the warm verifier" in stopped.stdout
    deadline = time.monotonic() + 10
    while socket.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not socket.exists()
