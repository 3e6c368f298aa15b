"""Fail-fast scoring runs the cheapest decisive cells first (issue 29): the default shape's
first cell and the plain shape groups before the default shape's repeats, values and layouts,
the stress shapes last. Planned by :func:`matrix_order`, driven through the fake pair."""

from __future__ import annotations

import torch
from tests.controller.fake_pair import FakePair, row_sum

from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import Settings
from kernelproof.controller.matrix import MatrixResult, MatrixRunner
from kernelproof.schema import TestOutcome
from kernelproof.tasks.variants import MatrixOrder, ShapeGroup, matrix_order, plan_matrix

DEFAULT = {"batch": 4, "dim": 64}


def _planned() -> list[ShapeGroup]:
    return plan_matrix(DEFAULT, [], [11, 12, 13], Settings())


def _names(groups: list[ShapeGroup]) -> list[str]:
    return [v.name for g in groups for v in g.variants]


def _stops_at_first_failure(result: MatrixResult) -> bool:
    return any(t.outcome is TestOutcome.FAILED for t in result.tests)


def _run(order: MatrixOrder, pair: FakePair) -> MatrixResult:
    runner = MatrixRunner(
        pair=pair, policy=TolerancePolicy(), init_seed=0, stop_after=_stops_at_first_failure
    )
    for part in (order.before, order.sampled, order.after):
        if part and not runner.stopped:
            runner.run(part)
    return runner.result


def test_without_fail_fast_the_order_is_the_plans():
    groups = _planned()
    order = matrix_order(groups, fail_fast=False)
    assert order.before == [] and order.sampled == groups[:1] and order.after == groups[1:]


def test_fail_fast_runs_every_cell_once_the_cheap_shapes_before_the_default_values():
    groups = _planned()
    order = matrix_order(groups, fail_fast=True)
    planned = _names(groups)
    ordered = _names(order.before + order.sampled + order.after)
    assert sorted(ordered) == sorted(planned)  # nothing dropped, nothing run twice
    assert ordered[0] == "seed:0"
    default_rest = [n for n in planned if n.startswith(("repeat:", "value:", "layout:"))]
    cheap = [v.name for g in groups[1:] if not g.stress for v in g.variants]
    stress = [v.name for g in groups[1:] if g.stress for v in g.variants]
    assert cheap and stress and default_rest
    assert ordered.index(cheap[-1]) < ordered.index(default_rest[0])
    assert ordered.index(stress[0]) > ordered.index(default_rest[-1])
    # The native audit samples the default shape's cells: they are one part, all default.
    assert all(g.is_default for g in order.sampled)
    assert all(v.kind.value != "shape" for g in order.sampled for v in g.variants)


def test_a_kernel_wrong_at_odd_sizes_is_stopped_after_a_few_cells():
    def wrong_when_odd(knobs, seed, dtype=torch.float32):
        out = row_sum(knobs, seed, dtype)
        return out + 1.0 if knobs["dim"] % 2 else out

    groups = _planned()
    order = matrix_order(groups, fail_fast=True)
    ordered = order.before + order.sampled + order.after
    first_odd = next(i for i, g in enumerate(ordered) if g.knobs["dim"] % 2)
    fast = _run(order, FakePair(candidate_side=wrong_when_odd))
    slow = _run(matrix_order(groups, fail_fast=False), FakePair(candidate_side=wrong_when_odd))
    assert fast.tests[-1].outcome is TestOutcome.FAILED
    assert slow.tests[-1].outcome is TestOutcome.FAILED
    # Fail-fast skips the default shape's repeats, values and layouts before the odd shape.
    assert len(fast.tests) < len(slow.tests) - 10
    # The first cell, its one-thread sample, one cell per shape up to the first odd one, and
    # at most the one cell that ran while the failing one was being compared.
    assert first_odd + 2 <= len(fast.tests) <= first_odd + 3
    failed = [t for t in fast.tests if t.outcome is TestOutcome.FAILED]
    assert failed[0].variant.knobs["dim"] % 2


def test_the_one_thread_sample_runs_once_when_the_default_shape_is_split():
    groups = _planned()
    result = _run(matrix_order(groups, fail_fast=True), FakePair())
    threaded = [t.variant.name for t in result.tests if t.variant.name.endswith("@1-thread")]
    assert threaded == ["seed:0@1-thread"]
    assert {t.outcome for t in result.tests} <= {TestOutcome.PASSED, TestOutcome.SKIPPED}
