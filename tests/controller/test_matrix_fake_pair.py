"""The correctness matrix's logic, driven through a fake pair (no worker process): which cells
run, what each outcome is, when the matrix stops and which failures end it. Milliseconds a
test; the slow tier runs the same runner against real workers."""

from __future__ import annotations

import pytest
import torch
from tests.controller.fake_pair import DIES, FakePair, row_sum

from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.controller.matrix import CandidateBroken, MatrixResult, MatrixRunner, TaskFailure
from kernelproof.schema import FindingCheck, TestOutcome
from kernelproof.schema.variant import InputVariant, VariantKind
from kernelproof.tasks.variants import ShapeGroup

DEFAULT = {"batch": 4, "dim": 64}


def _groups(*shapes: dict[str, int], seeds: int = 3) -> list[ShapeGroup]:
    default = ShapeGroup(
        label="default",
        knobs=DEFAULT,
        is_default=True,
        variants=[
            InputVariant(name=f"seed:{s}", kind=VariantKind.SEED, seed=s) for s in range(seeds)
        ],
    )
    others = [
        ShapeGroup(
            label=f"dim={shape['dim']}",
            knobs={**DEFAULT, **shape},
            variants=[
                InputVariant(
                    name=f"shape:dim={shape['dim']}", kind=VariantKind.SHAPE, knobs=shape, seed=0
                )
            ],
        )
        for shape in shapes
    ]
    return [default, *others]


def _run(pair: FakePair, groups: list[ShapeGroup], **options) -> MatrixResult:
    runner = MatrixRunner(
        pair=pair, policy=TolerancePolicy(), init_seed=0, one_thread_sample=False, **options
    )
    return runner.run(groups)


def _outcomes(result: MatrixResult) -> dict[str, TestOutcome]:
    return {test.variant.name: test.outcome for test in result.tests}


def test_an_honest_candidate_passes_every_cell_in_matrix_order():
    def other_order(knobs, seed, dtype=torch.float32):  # sums in reverse: another rounding
        return row_sum(knobs, seed, dtype).flip(0).flip(0) + 0.0

    result = _run(FakePair(candidate_side=other_order), _groups({"dim": 96}, {"dim": 33}))
    assert list(_outcomes(result)) == ["seed:0", "seed:1", "seed:2", "shape:dim=96", "shape:dim=33"]
    assert set(_outcomes(result).values()) == {TestOutcome.PASSED}
    assert all(test.compared_with == "oracle" for test in result.tests)


def test_a_candidate_wrong_at_one_shape_fails_that_cell_only():
    def wrong_when_odd(knobs, seed, dtype=torch.float32):
        out = row_sum(knobs, seed, dtype)
        return out + 1.0 if knobs["dim"] % 2 else out

    outcomes = _outcomes(
        _run(FakePair(candidate_side=wrong_when_odd), _groups({"dim": 96}, {"dim": 33}))
    )
    assert outcomes["shape:dim=33"] is TestOutcome.FAILED
    assert outcomes["shape:dim=96"] is TestOutcome.PASSED
    assert outcomes["seed:0"] is TestOutcome.PASSED


def test_a_precision_drop_fails_against_the_oracle():
    def bf16(knobs, seed, dtype=torch.float32):
        return row_sum(knobs, seed, dtype).to(torch.bfloat16).to(dtype)

    result = _run(FakePair(candidate_side=bf16), _groups())
    failed = [t for t in result.tests if t.outcome is TestOutcome.FAILED]
    assert failed and "output 0" in failed[0].message


def test_a_candidate_that_raises_off_the_default_shape_is_raised_there():
    def rejects_wide(knobs, seed, dtype=torch.float32):
        if knobs["dim"] > 64:
            raise ValueError("dim must be at most 64")
        return row_sum(knobs, seed, dtype)

    outcomes = _outcomes(_run(FakePair(candidate_side=rejects_wide), _groups({"dim": 96})))
    assert outcomes["shape:dim=96"] is TestOutcome.RAISED
    assert outcomes["seed:0"] is TestOutcome.PASSED


def test_a_candidate_that_fails_on_the_default_inputs_is_broken():
    def always(knobs, seed, dtype=torch.float32):
        raise RuntimeError("illegal memory access")

    with pytest.raises(CandidateBroken) as caught:
        _run(FakePair(candidate_side=always), _groups())
    assert caught.value.finding.check is FindingCheck.CALL


def test_a_candidate_that_cannot_be_built_is_broken_with_the_constructor_named():
    with pytest.raises(CandidateBroken) as caught:
        _run(FakePair(candidate_builds=False), _groups())
    assert caught.value.finding.check is FindingCheck.CONSTRUCTOR


def test_a_reference_that_fails_its_default_shape_is_the_task_at_fault():
    def broken_reference(knobs, seed, dtype=torch.float32):
        raise RuntimeError("CUDA error")

    with pytest.raises(TaskFailure):
        _run(FakePair(reference=broken_reference), _groups())


def test_a_shape_the_reference_rejects_is_skipped_not_held_against_the_candidate():
    def narrow_reference(knobs, seed, dtype=torch.float32):
        if knobs["dim"] == 33:
            raise ValueError("dim must be even")
        return row_sum(knobs, seed, dtype)

    outcomes = _outcomes(_run(FakePair(reference=narrow_reference), _groups({"dim": 33})))
    assert outcomes["shape:dim=33"] is TestOutcome.SKIPPED


def test_a_worker_death_off_the_default_shape_is_a_crash_of_that_cell():
    def dies_wide(knobs, seed, dtype=torch.float32):
        return DIES if knobs["dim"] == 96 else row_sum(knobs, seed, dtype)

    outcomes = _outcomes(_run(FakePair(candidate_side=dies_wide), _groups({"dim": 96})))
    assert outcomes["shape:dim=96"] is TestOutcome.CRASHED


def test_stop_after_ends_the_matrix_at_the_first_cell_it_accepts():
    def wrong(knobs, seed, dtype=torch.float32):
        return row_sum(knobs, seed, dtype) * 2

    pair = FakePair(candidate_side=wrong)
    stop = lambda result: any(t.outcome is TestOutcome.FAILED for t in result.tests)  # noqa: E731
    result = _run(pair, _groups({"dim": 96}), stop_after=stop)
    assert [t.variant.name for t in result.tests] == ["seed:0"]
    assert "candidate:run" in pair.asked and pair.asked.count("candidate:run") == 1


def test_each_group_builds_both_models_once_and_the_candidate_last():
    pair = FakePair()
    _run(pair, _groups({"dim": 96}))
    prepares = [ask for ask in pair.asked if ask.endswith(":prepare")]
    assert prepares == ["reference:prepare", "candidate:prepare"] * 2
