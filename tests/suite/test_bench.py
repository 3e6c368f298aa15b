"""kernelproof bench end to end: local pool, Ray, resume after kill -9, the Python API (slow)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelproof.schema import Verdict
from kernelproof.suite.bench import BenchOptions, run_bench

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
#: Fast settings for bench tests: the point is the machinery, not the kernels.
QUICK = {
    "seeds": 1,
    "timing": False,
    "shape_variants": False,
    "value_variants": False,
    "layout_variants": False,
    "shrink": False,
}


@pytest.fixture(scope="module")
def tiny_suite(tmp_path_factory) -> tuple[Path, Path]:
    """A KernelBench-layout suite of two tasks, with right, wrong and broken samples."""
    root = tmp_path_factory.mktemp("suite")
    suite, solutions = root / "suite" / "level1", root / "solutions" / "level1"
    suite.mkdir(parents=True)
    (solutions / "2").mkdir(parents=True)
    shutil.copy(EXAMPLES / "softmax" / "reference.py", suite / "1_Softmax.py")
    shutil.copy(EXAMPLES / "linear_relu" / "reference.py", suite / "2_LinearReLU.py")
    shutil.copy(EXAMPLES / "softmax" / "correct.py", solutions / "1_softmax.py")
    shutil.copy(EXAMPLES / "linear_relu" / "correct.py", solutions / "2" / "a_correct.py")
    shutil.copy(EXAMPLES / "linear_relu" / "hardcoded.py", solutions / "2" / "b_hardcoded.py")
    shutil.copy(EXAMPLES / "broken" / "wrong_signature.py", solutions / "2" / "c_broken.py")
    return root / "suite", root / "solutions"


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for the whole test session (starting one costs seconds)."""
    ray = pytest.importorskip("ray", reason="ray is part of the test extras; run scripts/test.sh")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={
            "env_vars": {
                k: v
                for k, v in os.environ.items()
                if k.endswith("_DIR") and "CACHE" in k or k == "TORCH_EXTENSIONS_DIR"
            }
        },
    )
    yield ray
    ray.shutdown()


def verdicts(outcome) -> dict[str, str]:
    return {
        f"{item.task.key}:{item.candidate.name}": report.verdict.value
        for item, report in outcome.reports
    }


EXPECTED = {
    "level1/1_Softmax:1_softmax.py": "verified",
    "level1/2_LinearReLU:a_correct.py": "verified",
    "level1/2_LinearReLU:b_hardcoded.py": "verified",  # wrong only at larger shapes
    "level1/2_LinearReLU:c_broken.py": "broken",
}


def test_local_pool_runs_stores_and_resumes(tiny_suite, tmp_path):
    suite, solutions = tiny_suite
    options = BenchOptions(jobs=2, db_url=f"sqlite:///{tmp_path / 'kp.db'}", overrides=QUICK)
    first = run_bench(suite, solutions, options)
    assert verdicts(first) == EXPECTED
    assert first.summary.overall.tasks == 2 and first.summary.overall.samples == 4
    assert first.resumed == 0
    again = run_bench(suite, solutions, options)
    assert again.resumed == 4 and again.reports == []
    assert again.summary.overall.verdicts == first.summary.overall.verdicts


def test_ray_cluster_gives_the_same_verdicts(tiny_suite, tmp_path, ray_cluster):
    suite, solutions = tiny_suite
    options = BenchOptions(ray="local", db_url=f"sqlite:///{tmp_path / 'ray.db'}", overrides=QUICK)
    outcome = run_bench(suite, solutions, options)
    assert verdicts(outcome) == EXPECTED


def test_kill_9_loses_nothing_stored_and_the_rerun_resumes(tiny_suite, tmp_path):
    suite, solutions = tiny_suite
    db = tmp_path / "killed.db"
    command = [
        sys.executable,
        "-m",
        "kernelproof.cli",
        "bench",
        str(suite),
        "--solutions",
        str(solutions),
        "--db",
        f"sqlite:///{db}",
        "--seeds",
        "1",
        "--no-timing",
        "--profile",
        "ci",
    ]
    bench = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stored = _wait_for_rows(db, at_least=1, timeout_s=400)
    os.kill(bench.pid, signal.SIGKILL)
    bench.wait()
    rows_after_kill = _rows(db)
    assert rows_after_kill >= stored >= 1
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stdout[-2000:]
    assert f"{rows_after_kill} resumed from the store" in " ".join(rerun.stdout.split())
    with sqlite3.connect(db) as connection:
        runs = connection.execute("select id, status from kernelproof_runs order by id").fetchall()
    assert runs[0][1] == "running" and runs[-1][1] == "finished"  # the killed run stays marked


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as connection:
            return connection.execute("select count(*) from kernelproof_verifications").fetchone()[
                0
            ]
    except sqlite3.OperationalError:
        return 0


def _wait_for_rows(db: Path, at_least: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        count = _rows(db)
        if count >= at_least:
            return count
        time.sleep(0.2)
    raise AssertionError(f"no verification was stored in {timeout_s} s")


def test_evaluate_is_safe_from_many_threads():
    import kernelproof

    reference = (EXAMPLES / "softmax" / "reference.py").read_text()
    candidates = [
        (EXAMPLES / "softmax" / "correct.py").read_text(),
        (EXAMPLES / "softmax" / "wrong_odd.py").read_text(),
        "this is not python(",
    ]
    results: dict[int, Verdict] = {}

    def score(index: int) -> None:
        report = kernelproof.evaluate(
            reference, candidates[index], seeds=1, timing=False, shrink=False
        )
        results[index] = report.verdict

    threads = [threading.Thread(target=score, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert results == {0: Verdict.VERIFIED, 1: Verdict.INCORRECT, 2: Verdict.BROKEN}


def test_gpumode_task_verifies_through_the_adapter(verified):
    folder = EXAMPLES / "gpumode" / "vectorsum"
    good = verified(folder / "submission.py", reference=folder, seeds=2)
    assert good.verdict is Verdict.VERIFIED, good.summary
    assert any(t.variant.knobs.get("size") == 1023 for t in good.correctness.tests)
    bad = verified(folder / "submission_wrong.py", reference=folder, seeds=2)
    assert bad.verdict is Verdict.INCORRECT


SLOW_SAMPLE = """
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        time.sleep(0.5)  # still running when the interrupt comes, however fast the others are
        return self.linear(x).relu()
"""


def test_ctrl_c_stops_cleanly_and_keeps_what_is_stored(tiny_suite, tmp_path):
    suite, solutions = tiny_suite
    solutions = shutil.copytree(solutions, tmp_path / "solutions")
    (solutions / "level1" / "2" / "d_slow.py").write_text(SLOW_SAMPLE)
    db = tmp_path / "interrupted.db"
    command = [
        sys.executable,
        "-m",
        "kernelproof.cli",
        "bench",
        str(suite),
        "--solutions",
        str(solutions),
        "--db",
        f"sqlite:///{db}",
        "--seeds",
        "1",
        "--no-timing",
        "--profile",
        "ci",
    ]
    # SIGINT back to its default in the child: a pytest-xdist worker ignores it, and an ignored
    # signal stays ignored across exec (Python then never raises KeyboardInterrupt).
    bench = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    _wait_for_rows(db, at_least=1, timeout_s=400)
    bench.send_signal(signal.SIGINT)
    output, _ = bench.communicate(timeout=120)
    assert bench.returncode == 130, output[-2000:]
    assert "interrupted" in output
    with sqlite3.connect(db) as connection:
        status = connection.execute("select status from kernelproof_runs").fetchone()[0]
    assert status == "interrupted" and _rows(db) >= 1
