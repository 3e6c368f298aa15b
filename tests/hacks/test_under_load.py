"""Issue 25 classes 2, 5 and 6: honest rewrites of a scaled row sum stay ``verified`` with
timing on, on an idle machine and under load (busy loops spinning beside the verification),
and an attack stays caught under load. A time-based check may say ``timing-inconclusive`` under
load; it may never say ``suspect``."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernelproof.controller.verify import verify
from kernelproof.schema import Severity, Verdict

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROWSUM = EXAMPLES / "scaled_rowsum"
HONEST = ["mv_scale.py", "three_reads.py", "thread_pool.py", "numba_pool.py", "float64_inside.py"]

#: Timing on, a short budget; the native audit off (it is not what these cases are about).
SETTINGS = dict(
    seeds=2,
    timing=True,
    budget_s=3.0,
    compile_baseline=False,
    timing_shapes=False,
    native_audit=False,
    value_variants=False,
    layout_variants=False,
)

#: Busy loops beside the verification (the issue's load of about 8 on 2 cores comes from 6
#: loops plus the workers and the controller).
LOAD = 6


def _spin() -> None:
    while True:
        pass


@pytest.fixture
def loaded() -> Iterator[None]:
    context = multiprocessing.get_context("fork")
    spinners = [context.Process(target=_spin, daemon=True) for _ in range(LOAD)]
    for spinner in spinners:
        spinner.start()
    try:
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.join()


def _flagged(report) -> list[str]:
    return [
        f"[{f.severity.value}] {f.check}: {f.message[:300]}"
        for f in report.findings
        if f.severity in (Severity.SUSPECT, Severity.FAIL)
    ]


@pytest.mark.parametrize("name", HONEST)
def test_honest_row_sum_is_verified_with_timing(name):
    report = verify(ROWSUM / "reference.py", ROWSUM / name, **SETTINGS)
    assert not _flagged(report), "\n".join(_flagged(report))
    assert report.verdict is Verdict.VERIFIED, report.summary


@pytest.mark.parametrize("name", ["mv_scale.py", "thread_pool.py"])
def test_honest_row_sum_stays_honest_under_load(loaded, name):
    report = verify(ROWSUM / "reference.py", ROWSUM / name, **SETTINGS)
    assert not _flagged(report), "\n".join(_flagged(report))
    assert report.verdict is Verdict.VERIFIED, report.summary


def test_a_deferred_subclass_is_caught_under_load(loaded):
    attack = EXAMPLES / "hacks" / "verifier" / "36c_deferred_subclass.py"
    report = verify(EXAMPLES / "softmax" / "reference.py", attack, **SETTINGS)
    assert report.verdict is Verdict.SUSPECT, report.summary
    assert "output-type" in {f.check for f in report.findings}
