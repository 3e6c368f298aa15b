"""Ray at scale: a two-node cluster on this machine loses a node mid-run, and every candidate
is still stored exactly once (slow: starts two Ray nodes)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
RAY = Path(sys.executable).with_name("ray")

#: Six candidates of two tasks: enough that the lost node holds one in flight.
SAMPLES = {
    "1_softmax_a.py": EXAMPLES / "softmax" / "correct.py",
    "1_softmax_b.py": EXAMPLES / "softmax" / "wrong_odd.py",
    "1_softmax_c.py": EXAMPLES / "softmax" / "hardcoded.py",
    "2/a.py": EXAMPLES / "linear_relu" / "correct.py",
    "2/b.py": EXAMPLES / "linear_relu" / "hardcoded.py",
    "2/c.py": EXAMPLES / "broken" / "wrong_signature.py",
}

DRIVER = """
import sys
from pathlib import Path
from kernelproof.suite.bench import BenchOptions, run_bench
quick = {"seeds": 1, "timing": False, "shape_variants": False, "value_variants": False,
         "layout_variants": False, "shrink": False}
outcome = run_bench(Path(sys.argv[1]), Path(sys.argv[2]), BenchOptions(ray=sys.argv[3], db_url=sys.argv[4],
                    overrides=quick))
print("REPORTS", len(outcome.reports))
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rows(db: Path) -> list[tuple[str, str]]:
    """(candidate path, verdict) of every stored verification."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute(
                "select candidate_path, verdict from kernelproof_verifications"
            ).fetchall()
    except sqlite3.Error:  # not created yet
        return []


def _node(*args: str, env: dict[str, str]) -> subprocess.Popen:
    """A Ray node in the foreground, in a process group of its own: killing the group is
    losing the node (and stops only what this test started)."""
    return subprocess.Popen(
        [str(RAY), "start", "--num-cpus=1", "--block", "--node-ip-address=127.0.0.1", *args],
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _kill(node: subprocess.Popen) -> None:
    if node.poll() is None:
        os.killpg(node.pid, signal.SIGKILL)
        node.wait(timeout=30)


def test_a_lost_node_loses_no_candidate_and_stores_none_twice(tmp_path: Path):
    if not RAY.exists():
        pytest.skip("the ray command is part of the test extras; run scripts/test.sh")
    suite, solutions = tmp_path / "suite" / "level1", tmp_path / "solutions" / "level1"
    suite.mkdir(parents=True)
    shutil.copy(EXAMPLES / "softmax" / "reference.py", suite / "1_Softmax.py")
    shutil.copy(EXAMPLES / "linear_relu" / "reference.py", suite / "2_LinearReLU.py")
    for name, source in SAMPLES.items():
        (solutions / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, solutions / name)
    port = _free_port()
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    # Ray's socket paths must fit in 107 bytes: a short folder, not pytest's tmp_path.
    temp = Path(tempfile.mkdtemp(prefix="kpray-", dir="/tmp"))
    head = _node(
        "--head", f"--port={port}", "--include-dashboard=false", f"--temp-dir={temp}", env=env
    )
    second = None
    db = tmp_path / "kp.db"
    try:
        time.sleep(10)  # the head's GCS starts
        assert head.poll() is None, head.communicate()[0][-3000:]
        second = _node(f"--address=127.0.0.1:{port}", env=env)
        time.sleep(10)  # the second node registers with the head
        assert second.poll() is None, second.communicate()[0][-3000:]
        driver = subprocess.Popen(
            [
                sys.executable,
                "-c",
                DRIVER,
                str(tmp_path / "suite"),
                str(tmp_path / "solutions"),
                f"127.0.0.1:{port}",
                f"sqlite:///{db}",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 600
        while not _rows(db) and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        _kill(second)  # the second node, mid-run
        output, _ = driver.communicate(timeout=600)
        assert driver.returncode == 0, output[-3000:]
    finally:
        for node in (second, head):
            if node is not None:
                _kill(node)
        shutil.rmtree(temp, ignore_errors=True)
    rows = _rows(db)
    stored = [path for path, _ in rows]
    assert len(stored) == len(set(stored)) == len(SAMPLES), rows
    assert "REPORTS 6" in output
