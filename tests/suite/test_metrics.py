"""Suite metrics on hand-made records whose answers are known."""

import json
import math

import pytest

from kernelproof.errors import UsageError
from kernelproof.schema import (
    Artifact,
    Baselines,
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
from kernelproof.schema.comparison import ChangeKind, CompareExitCode
from kernelproof.schema.suite import MAX_SPEEDUP, SuiteSummary
from kernelproof.store.metrics import (
    ResultRecord,
    best_per_task,
    correctness_rate,
    fast_p,
    geomean_speedup,
    pass_at_k,
    pass_at_k_suite,
    record_from_report,
    summarize,
    verdict_counts,
)
from kernelproof.suite.comparison import compare_runs

V, I, S, B = Verdict.VERIFIED, Verdict.INCORRECT, Verdict.SUSPECT, Verdict.BROKEN


def rec(task, verdict, speedup=None, sample=0, level=1, compile_=None, shapes=None, ci=None):
    return ResultRecord(
        task_key=task,
        level=level,
        problem=task.rsplit("/", 1)[-1],
        sample=sample,
        verdict=verdict,
        speedup=speedup,
        speedup_vs_compile=compile_,
        per_shape_speedups=shapes or {},
        speedup_ci=ci,
    )


# -- fast_p --------------------------------------------------------------------------------------


def test_fast_p_counts_incorrect_tasks_in_the_denominator():
    records = [rec("t1", V, 2.5), rec("t2", V, 1.2), rec("t3", I, 10.0), rec("t4", B)]
    assert fast_p(records) == {0.0: 0.5, 1.0: 0.5, 1.5: 0.25, 2.0: 0.25}
    # A fast but incorrect candidate never counts, whatever its speedup.
    assert fast_p(records, [5.0]) == {5.0: 0.0}


def test_fast_p_uses_the_best_verified_sample_and_total_tasks():
    records = [
        rec("t1", I, 9.0, sample=0),
        rec("t1", V, 1.1, sample=1),
        rec("t1", V, 1.6, sample=2),
        rec("t2", S, 3.0),
    ]
    assert fast_p(records, [1.0, 1.5]) == {1.0: 0.5, 1.5: 0.5}
    # Two suite tasks had no candidate at all: they fail too.
    assert fast_p(records, [1.0], total_tasks=4) == {1.0: 0.25}
    with pytest.raises(UsageError, match="total_tasks=1"):
        fast_p(records, total_tasks=1)


def test_fast_0_counts_a_verified_untimed_candidate_but_higher_p_does_not():
    assert fast_p([rec("t1", V, None)], [0.0, 1.0]) == {0.0: 1.0, 1.0: 0.0}


# -- geomean -------------------------------------------------------------------------------------


def test_geomean_over_verified_tasks_only():
    records = [rec("t1", V, 2.0), rec("t2", V, 8.0), rec("t3", I, 1000.0), rec("t4", V, None)]
    assert geomean_speedup(records) == pytest.approx(4.0)
    assert geomean_speedup([rec("t1", I, 3.0)]) is None


def test_geomean_clamps_so_one_time_cannot_explode_or_collapse_it():
    exploding = [rec("t1", V, 1.0), rec("t2", V, 1e12)]
    assert geomean_speedup(exploding) == pytest.approx(math.sqrt(MAX_SPEEDUP))
    collapsing = [rec("t1", V, 1.0), rec("t2", V, 0.0)]
    assert geomean_speedup(collapsing) == pytest.approx(1 / math.sqrt(MAX_SPEEDUP))
    assert geomean_speedup([rec("t1", V, math.inf)]) == pytest.approx(MAX_SPEEDUP)


def test_geomean_against_compile_and_over_shapes():
    records = [
        rec("t1", V, 2.0, compile_=0.5, shapes={"default": 2.0, "half": 8.0}),
        rec("t2", V, 2.0, compile_=2.0, shapes={"default": 4.0}),
    ]
    assert geomean_speedup(records, "compile") == pytest.approx(1.0)
    assert geomean_speedup(records, "shapes") == pytest.approx(4.0)  # sqrt(4 * 4)
    with pytest.raises(UsageError, match="unknown baseline"):
        geomean_speedup(records, "triton")


# -- record_from_report: the per-shape floor ----------------------------------------------------


def stats(median):
    return TimingStats(median_s=median, iqr_s=0.0, samples=[median])


def timed_report(ref_s, cand_s, floor_s, compile_speedup=None):
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    speedup = ref_s / cand_s
    shape = ShapeTiming(
        variant="default",
        knobs={},
        reference=stats(ref_s),
        candidate=stats(cand_s),
        speedup=speedup,
        speedup_ci=(speedup * 0.9, speedup * 1.1),
        floor_s=floor_s,
    )
    timing = Timing(
        reference=stats(ref_s),
        candidate=stats(cand_s),
        speedup=speedup,
        speedup_ci=shape.speedup_ci,
        per_shape=[shape],
        baselines=Baselines(eager=speedup, torch_compile=compile_speedup),
    )
    return Report(
        verdict=Verdict.VERIFIED,
        timing=timing,
        environment=Environment(device="cpu"),
        correctness=Correctness(
            seeds=[1],
            base_seed=0,
            default_knobs={},
            task_knobs={},
            tolerance={},
            tests=[CorrectnessTest(variant=variant, seed=1, outcome=TestOutcome.PASSED)],
        ),
        candidate=Artifact(path="c.py", sha256="c" * 64),
        reference=Artifact(path="r.py", sha256="r" * 64),
    )


def test_a_time_below_the_floor_is_raised_to_the_floor():
    # The candidate claims 1 ms where moving its bytes takes at least 4 ms.
    record = record_from_report(
        timed_report(8e-3, 1e-3, 4e-3, compile_speedup=6.0), "level1/3_x", 1, 3
    )
    assert record.floor_clamped
    assert record.speedup == pytest.approx(2.0)  # 8 ms / 4 ms, not 8x
    assert record.speedup_ci == pytest.approx((1.8, 2.2))
    assert record.speedup_vs_compile == pytest.approx(1.5)
    assert record.per_shape_speedups == {"default": pytest.approx(2.0)}
    assert record.problem == "3"


def test_a_time_above_the_floor_is_kept():
    record = record_from_report(timed_report(8e-3, 2e-3, 1e-3), "t", None, "x")
    assert not record.floor_clamped and record.speedup == pytest.approx(4.0)


# -- pass@k, correctness, counts ---------------------------------------------------------------


def test_pass_at_k_known_values():
    assert pass_at_k(10, 0, 1) == 0.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(4, 1, 4) == 1.0
    with pytest.raises(UsageError, match="k <= n"):
        pass_at_k(3, 1, 4)


def test_pass_at_k_suite_averages_tasks_and_skips_undefined_k():
    records = [rec("a", V if i < 2 else I, sample=i) for i in range(5)] + [
        rec("b", I, sample=i) for i in range(5)
    ]
    result = pass_at_k_suite(records, ks=(1, 2, 10))
    assert result == {1: pytest.approx(0.2), 2: pytest.approx(0.35)}  # (0.7 + 0) / 2


def test_correctness_rate_and_verdict_counts():
    records = [rec("a", V), rec("b", V), rec("c", I), rec("d", B, level=2)]
    assert correctness_rate(records) == 0.5
    assert correctness_rate([]) is None
    assert verdict_counts(records) == {
        "verified": 2,
        "incorrect": 1,
        "suspect": 0,
        "broken": 1,
        "error": 0,
    }


def test_best_per_task_prefers_timed_verified_samples():
    records = [rec("a", V, None, sample=0), rec("a", V, 1.5, sample=1), rec("a", I, 9, sample=2)]
    assert best_per_task(records)["a"].sample == 1
    assert best_per_task([rec("b", I, 2, sample=0), rec("b", B, sample=1)])["b"].sample == 0


# -- the summary ---------------------------------------------------------------------------------


def test_summary_per_level_and_json_round_trip():
    records = [
        rec("level1/1", V, 2.0),
        rec("level1/2", I),
        rec("level2/1", V, 0.5, level=2),
        rec("other", V, 8.0, level=None),
    ]
    summary = summarize(records, total_tasks=5)
    assert summary.overall.tasks == 5 and summary.overall.samples == 4
    assert summary.overall.fast_p[1.0] == pytest.approx(2 / 5)
    assert summary.overall.geomean_speedup == pytest.approx(2.0)  # (2 * 0.5 * 8) ** (1/3)
    assert set(summary.levels) == {1, 2}
    assert summary.levels[1].correctness_rate == 0.5
    assert summary.levels[1].verdicts["incorrect"] == 1
    assert summary.levels[2].fast_p[1.0] == 0.0
    data = json.loads(summary.to_json())
    assert data["schema"] == "kernelproof.suite-summary/1"
    assert data["levels"]["1"]["fast_p"]["1.5"] == 0.5
    assert SuiteSummary.model_validate_json(summary.to_json()) == summary


# -- comparing runs -----------------------------------------------------------------------------


def test_compare_flags_lost_verdicts_and_drops_beyond_both_cis():
    a = [
        rec("lost", V, 2.0, ci=(1.9, 2.1)),
        rec("slower", V, 2.0, ci=(1.9, 2.1)),
        rec("noisy", V, 2.0, ci=(1.8, 2.2)),
        rec("faster", V, 1.0, ci=(0.9, 1.1)),
        rec("fixed", I),
        rec("gone", V, 1.0),
    ]
    b = [
        rec("lost", I),
        rec("slower", V, 1.5, ci=(1.4, 1.6)),
        rec("noisy", V, 1.85, ci=(1.7, 1.95)),
        rec("faster", V, 3.0, ci=(2.8, 3.2)),
        rec("fixed", V, 1.0),
        rec("new", V, 1.0),
    ]
    result = compare_runs(a, b)
    kinds = {c.task_key: c.kind for c in result.changes}
    assert kinds == {
        "lost": ChangeKind.LOST_VERIFIED,
        "slower": ChangeKind.SLOWER,
        "noisy": ChangeKind.UNCHANGED,
        "faster": ChangeKind.FASTER,
        "fixed": ChangeKind.GAINED_VERIFIED,
        "gone": ChangeKind.ONLY_A,
        "new": ChangeKind.ONLY_B,
    }
    assert {c.task_key for c in result.regressions} == {"lost", "slower"}
    assert result.exit_code is CompareExitCode.REGRESSION
    assert next(c for c in result.changes if c.task_key == "slower").ratio == pytest.approx(0.75)
    assert compare_runs(a, a).exit_code is CompareExitCode.SAME_OR_BETTER
