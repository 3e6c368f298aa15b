"""A speedup timed without an interval (too few rounds for a bootstrap) is not a measurement:
the store keeps neither bound, the server's API gives null for it and its speedup, and the
suite metrics leave such shapes out and say how many."""

from __future__ import annotations

import math

import pytest

from kernelproof.schema import (
    Artifact,
    Correctness,
    CorrectnessTest,
    Environment,
    InputVariant,
    Report,
    ShapeTiming,
    TestOutcome,
    Timing,
    TimingStats,
    VariantKind,
    Verdict,
)
from kernelproof.store.metrics import record_from_report, summarize
from kernelproof.store.results import ResultsStore

UNMEASURED = (0.0, math.inf)


def stats(median: float) -> TimingStats:
    return TimingStats(median_s=median, iqr_s=median / 10, samples=[median] * 2)


def report(default_ci: tuple[float, float], other_ci: tuple[float, float]) -> Report:
    shapes = [
        ShapeTiming(
            variant=name,
            knobs={"dim": dim},
            reference=stats(2e-3),
            candidate=stats(1e-3 / factor),
            speedup=2.0 * factor,
            speedup_ci=ci,
        )
        for name, dim, factor, ci in (
            ("default", 64, 1.0, default_ci),
            ("shape:dim=128", 128, 1.14, other_ci),
        )
    ]
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    return Report(
        verdict=Verdict.VERIFIED,
        findings=[],
        timing=Timing(
            reference=stats(2e-3),
            candidate=stats(1e-3),
            speedup=2.0,
            speedup_ci=default_ci,
            per_shape=shapes,
        ),
        correctness=Correctness(
            seeds=[1],
            base_seed=0,
            default_knobs={"dim": 64},
            task_knobs={"dim": 64},
            tolerance={"mode": "oracle"},
            tests=[CorrectnessTest(variant=variant, seed=1, outcome=TestOutcome.PASSED)],
        ),
        environment=Environment(device="cpu", versions={}),
        settings={},
        duration_s=1.0,
        candidate=Artifact(path="c.py", sha256="c" * 64),
        reference=Artifact(path="r.py", sha256="r" * 64),
    )


def test_a_record_without_an_interval_has_no_speedup():
    record = record_from_report(report(UNMEASURED, UNMEASURED), "t", 1, 1)
    assert record.speedup is None and record.speedup_ci is None
    assert record.per_shape_speedups == {"default": None, "shape:dim=128": None}
    measured = record_from_report(report((1.9, 2.1), UNMEASURED), "t", 1, 1)
    assert measured.speedup == pytest.approx(2.0)
    assert measured.per_shape_speedups == {"default": pytest.approx(2.0), "shape:dim=128": None}


def test_the_metrics_leave_shapes_without_an_interval_out_and_count_them():
    records = [
        record_from_report(report((1.9, 2.1), UNMEASURED), "a", 1, 1),
        record_from_report(report(UNMEASURED, (2.0, 2.6)), "b", 1, 2),
    ]
    overall = summarize(records).overall
    assert overall.timed_tasks == 1 and overall.geomean_speedup == pytest.approx(2.0)
    # Each task's geomean over its measured shapes only: a at 2.0, b at 2.28.
    assert overall.geomean_speedup_all_shapes == pytest.approx(math.sqrt(2.0 * 2.28))
    assert overall.shapes_without_interval == 2


def test_store_and_api_say_null_for_both_bounds(tmp_path):
    with ResultsStore(f"sqlite:///{tmp_path / 'results.db'}") as store:
        run_id = store.start_run(
            suite="s", solutions="c", settings={}, fingerprint="f", device="cpu"
        )
        store.add(run_id, "t", 1, 1, 0, report(UNMEASURED, (2.0, 2.6)))
        (row,) = store.verifications(run_id)
        assert (row.speedup, row.speedup_ci_low, row.speedup_ci_high) == (None, None, None)
        assert row.per_shape_speedups == {"default": None, "shape:dim=128": pytest.approx(2.28)}
        assert row.to_record().speedup is None
    pytest.importorskip("fastapi")
    from kernelproof.serve.views import _result

    result = _result(row)
    assert result.speedup is None and result.speedup_ci is None
    assert '"speedup_ci":null' in result.model_dump_json()
