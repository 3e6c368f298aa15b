"""Building a report's envelope from the matrix's cells: which ranges count as covered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelproof.controller.envelope import build_envelope
from kernelproof.schema import CorrectnessTest, InputVariant, TestOutcome, VariantKind
from kernelproof.schema.envelope import CallSignature

DEFAULT = {"batch": 64, "dim": 96}


def _cell(
    knobs: dict[str, int],
    outcome: TestOutcome = TestOutcome.PASSED,
    kind: VariantKind = VariantKind.SHAPE,
) -> CorrectnessTest:
    name = "shape:" + ",".join(f"{k}={v}" for k, v in knobs.items()) if knobs else "seed:0"
    variant = InputVariant(name=name, kind=kind if knobs else VariantKind.SEED, knobs=knobs, seed=1)
    return CorrectnessTest(variant=variant, seed=1, outcome=outcome)


def _signature(knobs: dict[str, int], rows: Callable[[int], int] = lambda b: b) -> CallSignature:
    full = {**DEFAULT, **knobs}
    return CallSignature.of([torch.zeros(rows(full["batch"]), full["dim"])])


def _matrix(
    batch_values: list[int],
    outcomes: dict[int, TestOutcome] | None = None,
    rows: Callable[[int], int] = lambda b: b,
) -> Any:
    outcomes = outcomes or {}
    tests = [_cell({})]
    signatures = {"seed:0": _signature({}, rows)}
    for value in batch_values:
        cell = _cell({"batch": value}, outcomes.get(value, TestOutcome.PASSED))
        tests.append(cell)
        signatures[cell.variant.name] = _signature({"batch": value}, rows)
    return build_envelope(tests, signatures, DEFAULT)


def _batch_range(envelope: Any) -> Any:
    return next(r for r in envelope.ranges if r.knob == "batch")


def test_a_range_grows_from_the_default_over_close_values_with_an_odd_one() -> None:
    envelope = _matrix([1, 32, 61, 65, 128, 256, 512])
    batch = _batch_range(envelope)
    assert batch.covered and (batch.low, batch.high) == (32, 128)
    assert envelope.contains(_signature({"batch": 100}))
    assert not envelope.contains(_signature({"batch": 200}))  # past 2x of the odd 65
    assert envelope.contains(_signature({"batch": 512}))  # exact, outside the range
    assert not envelope.contains(_signature({"batch": 5}))


def test_a_failing_size_splits_the_range() -> None:
    envelope = _matrix([32, 61, 65, 96, 128], outcomes={96: TestOutcome.RAISED})
    batch = _batch_range(envelope)
    assert (batch.low, batch.high) == (32, 65)
    assert not envelope.contains(_signature({"batch": 90}))


def test_without_an_odd_value_no_range_is_covered() -> None:
    batch = _batch_range(_matrix([32, 128]))
    assert not batch.covered and "odd" in batch.reason


def test_a_dimension_that_follows_the_knob_linearly_is_bound() -> None:
    envelope = _matrix([32, 61, 65, 128], rows=lambda b: 2 * b + 1)
    binding = _batch_range(envelope).bindings[0]
    assert (binding.scale, binding.offset) == (2, 1)
    assert envelope.knobs_for(_signature({"batch": 100}, rows=lambda b: 2 * b + 1)) == {
        "batch": 100,
        "dim": 96,
    }
    assert not envelope.contains(CallSignature.of([torch.zeros(200, 96)]))  # even: no knob


def test_a_non_linear_dimension_leaves_exact_matches_only() -> None:
    batch = _batch_range(_matrix([32, 61, 65, 128], rows=lambda b: b * b))
    assert not batch.covered and "linearly" in batch.reason


@pytest.mark.slow
def test_a_verified_report_carries_its_envelope(
    verified: Callable[..., Any], examples: Path
) -> None:
    report = verified(examples / "guard" / "time_bomb.py")  # shared with tests/dispatch
    envelope = report.envelope
    assert report.verdict.value == "verified" and envelope is not None
    default = report.correctness.default_knobs
    assert envelope.contains(CallSignature.of([torch.randn(default["batch_size"], default["dim"])]))
    # The strided layout variant is in, as the candidate received it.
    assert any(not arg.contiguous for s in envelope.signatures for arg in s.args)
    assert {r.knob for r in envelope.ranges} == set(default)
    reread = type(report).model_validate_json(report.to_json()).envelope
    assert reread is not None and reread.model_dump() == envelope.model_dump()
