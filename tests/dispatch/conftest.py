"""Fixtures for the guard: a verified report built without workers (fast), and the guard
examples' modules."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.controller.envelope import build_envelope
from kernelproof.controller.environment import collect_environment
from kernelproof.dispatch.environment_gate import source_hash
from kernelproof.proof.probe import matrix_thread_count
from kernelproof.schema import (
    Artifact,
    Correctness,
    CorrectnessTest,
    Environment,
    InputVariant,
    Report,
    TestOutcome,
    VariantKind,
    Verdict,
)
from kernelproof.schema.envelope import CallSignature
from kernelproof.tasks.module import import_file

GUARD_EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "guard"

#: The default shape of examples/guard/reference.py.
DEFAULT = {"batch_size": 64, "dim": 256}

#: Batch sizes the synthetic matrix "passed" at (as the real matrix runs them).
BATCHES = [1, 32, 61, 65, 128, 256, 512]


def _cell(knobs: dict[str, int]) -> CorrectnessTest:
    name = "shape:" + ",".join(f"{k}={v}" for k, v in knobs.items()) if knobs else "seed:0"
    kind = VariantKind.SHAPE if knobs else VariantKind.SEED
    return CorrectnessTest(
        variant=InputVariant(name=name, kind=kind, knobs=knobs, seed=7),
        seed=7,
        outcome=TestOutcome.PASSED,
    )


def _signature(knobs: dict[str, int], device: str) -> CallSignature:
    shape = ({**DEFAULT, **knobs}["batch_size"], DEFAULT["dim"])
    [tensor] = CallSignature.of([torch.zeros(shape)]).args
    return CallSignature(args=(tensor.model_copy(update={"device": device}),))


def synthetic_report(
    tolerance: dict[str, Any] | None = None,
    device: str = "cpu",
    candidate: Path = GUARD_EXAMPLES / "time_bomb.py",
) -> Report:
    """A verified report of examples/guard's task whose envelope holds the default shape and
    a covered batch_size range (32..128), as a real verification would give it, proved in this
    environment (so the guard serves it) on ``candidate``'s source (the file that defines the
    modules a test guards)."""
    cells = [_cell({})] + [_cell({"batch_size": b}) for b in BATCHES]
    signatures = {c.variant.name: _signature(c.variant.knobs, device) for c in cells}
    return Report(
        verdict=Verdict.VERIFIED,
        correctness=Correctness(
            seeds=[7],
            base_seed=1234,
            default_knobs=DEFAULT,
            task_knobs=DEFAULT,
            tolerance=tolerance or TolerancePolicy().describe(),
            tests=cells,
        ),
        envelope=build_envelope(cells, signatures, DEFAULT),
        environment=_environment(device),
        reference=Artifact(path=str(GUARD_EXAMPLES / "reference.py"), sha256="0" * 64),
        candidate=Artifact(path=str(candidate), sha256=source_hash(candidate) or ""),
    )


@functools.lru_cache(maxsize=2)
def _environment(device: str) -> Environment:
    """This machine's environment (on "cuda" without a GPU, the CPU's facts under that
    device name: the tests that use it never serve)."""
    return collect_environment(device, 1, matrix_thread_count(device, None) or 1)


@pytest.fixture(scope="session")
def report() -> Report:
    return synthetic_report()


@pytest.fixture
def example() -> Callable[[str], torch.nn.Module]:
    """``example(name)``: a fresh module from examples/guard (``reference`` is the task's
    ``Model``, any other name a candidate's ``ModelNew``)."""

    def build(name: str) -> torch.nn.Module:
        module = import_file(str(GUARD_EXAMPLES / f"{name}.py"), f"guard_example_{name}")
        return module.Model() if name == "reference" else module.ModelNew()

    return build


@pytest.fixture(autouse=True)
def one_thread() -> Any:
    """Serving-loop tests make thousands of small calls: at two threads on a shared machine
    OpenMP barriers make each take milliseconds (see docs/architecture.md, Timing)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
