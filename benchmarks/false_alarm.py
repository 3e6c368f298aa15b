"""How often does the tolerance call an honest kernel wrong, and does it still catch wrong ones?

Issue 25, class 5. A verification compares a candidate's outputs many times: the matrix's
cells against the float64 oracle (seeds, shapes, value variants), then every verified timed
call against the reference's timed output. A rule that suits a few dozen cells fires by
chance when it is applied thousands of times, so the false-alarm rate that matters is per
*verification*. This benchmark simulates whole verifications in process, with the very
judging code the controller runs (:func:`kernelproof.checks.tolerance.compare_output`, the
oracle's :func:`kernelproof.checks.forward_error.forward_bounds`, the own-error and bound
learning of the matrix, twice the learned bound on timed calls):

* three reductions whose honest rewrites sum in other orders: a scaled row sum (the issue's
  ``torch.mv(x, ones) * scale``), an L1 norm (its held-out C++ kernel), a matvec (its
  float64-inside kernel);
* honest orders: mv, matmul, einsum, a sequential loop, blocked sums, Kahan, float64 inside;
* wrong candidates that must stay caught: bfloat16 and float16 inputs, one element off by
  4096 units in the last place, one call in 200 off by 1e-3.

Each verification: 5 seeds at the default shape, 3 other shapes, the value variants at the
default shape (``equal-rows``, ``repeated-rows``, ``shift``, ``scale-1e3``, ``scale-1e-3``,
``quantised``, ``integers``), then ``--timed`` timed calls on fresh inputs. Printed: per
candidate, the verifications that failed, the worst cell and timed ratio against the limit
(3), and for the honest set together the rule-of-three upper bound on the false-alarm rate.

    .venv/bin/python benchmarks/false_alarm.py                 # ~2-4 minutes on 2 cores
    .venv/bin/python benchmarks/false_alarm.py --rule old      # the rule before issue 25
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np
import torch

from kernelproof.checks.forward_error import ForwardBound, forward_bounds
from kernelproof.checks.tolerance import Comparison, OwnError, TolerancePolicy, compare_output
from kernelproof.schema.variant import ValueTransform
from kernelproof.tasks.inputs import structured_values

POLICY = TolerancePolicy()
DEFAULT_SHAPE = (16, 16384)
OTHER_SHAPES = [(1, 16384), (3, 17), (5, 4099)]
SEEDS = 5
VALUE_VARIANTS = [
    ValueTransform.EQUAL_ROWS,
    ValueTransform.REPEATED_ROWS,
    ValueTransform.SHIFT,
    ValueTransform.SCALE_UP,
    ValueTransform.SCALE_DOWN,
    ValueTransform.QUANTISED,
    ValueTransform.INTEGERS,
]


# -- the tasks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """A reduction along rows: ``finish(sum(terms(x)))``; ``weight`` for the matvec."""

    name: str
    terms: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    vector: Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
    """The (matrix, vector) an mv-style rewrite multiplies."""
    scale: float

    def reference(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        if self.name == "matvec":
            return x @ w
        return self.terms(x, w).sum(-1) * self.scale


TASKS = [
    Task("row_sum", lambda x, w: x, lambda x, w: (x, x.new_ones(x.shape[-1])), 0.5),
    Task("l1_norm", lambda x, w: x.abs(), lambda x, w: (x.abs(), x.new_ones(x.shape[-1])), 1.0),
    Task("matvec", lambda x, w: x * w, lambda x, w: (x, w), 1.0),
]


# -- candidates ---------------------------------------------------------------------------------


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _sequential(t, out):
    for r in range(t.shape[0]):
        acc = np.float32(0.0)
        for c in range(t.shape[1]):
            acc = np.float32(acc + t[r, c])
        out[r] = acc


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _blocked(t, out):
    for r in range(t.shape[0]):
        total = np.float32(0.0)
        for start in range(0, t.shape[1], 64):
            block = np.float32(0.0)
            for c in range(start, min(start + 64, t.shape[1])):
                block = np.float32(block + t[r, c])
            total = np.float32(total + block)
        out[r] = total


@numba.njit("void(float32[:, ::1], float32[::1])", cache=False)
def _kahan(t, out):
    for r in range(t.shape[0]):
        acc = np.float32(0.0)
        carry = np.float32(0.0)
        for c in range(t.shape[1]):
            y = np.float32(t[r, c] - carry)
            s = np.float32(acc + y)
            carry = np.float32(np.float32(s - acc) - y)
            acc = s
        out[r] = acc


def _loop(
    kernel: Callable[..., None],
) -> Callable[[Task, torch.Tensor, torch.Tensor], torch.Tensor]:
    def run(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        terms = task.terms(x, w).contiguous()
        out = np.empty(terms.shape[0], dtype=np.float32)
        kernel(terms.numpy(), out)
        return torch.from_numpy(out) * task.scale

    return run


def _mv(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    a, b = task.vector(x, w)
    return torch.mv(a, b) * task.scale


def _matmul(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    a, b = task.vector(x, w)
    return (a @ b[:, None]).squeeze(-1) * task.scale


def _einsum(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    a, b = task.vector(x, w)
    return torch.einsum("bi,i->b", a, b) * task.scale


def _float64(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (task.terms(x.double(), w.double()).sum(-1) * task.scale).float()


def _low(dtype: torch.dtype) -> Callable[[Task, torch.Tensor, torch.Tensor], torch.Tensor]:
    def run(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        a, b = task.vector(x.to(dtype).float(), w)
        return torch.mv(a, b) * task.scale

    return run


def _one_element(task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = task.reference(x, w).clone()
    ulp = torch.finfo(torch.float32).eps * max(float(out[0].abs()), 1e-30)
    out[0] += 4096 * ulp
    return out


class _RareCall:
    """Right on every call but one in 200, off by 1e-3 there."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, task: Task, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = task.reference(x, w)
        return out * (1 + 1e-3) if self.calls % 200 == 0 else out


HONEST: dict[str, Callable[..., torch.Tensor]] = {
    "mv": _mv,
    "matmul": _matmul,
    "einsum": _einsum,
    "sequential": _loop(_sequential),
    "blocked": _loop(_blocked),
    "kahan": _loop(_kahan),
    "float64-inside": _float64,
}


def wrong_candidates() -> dict[str, Callable[..., torch.Tensor]]:
    return {
        "bfloat16-inputs": _low(torch.bfloat16),
        "float16-inputs": _low(torch.float16),
        "one-element-4096-ulps": _one_element,
        "1-in-200-calls-1e-3": _RareCall(),
    }


# -- one verification ---------------------------------------------------------------------------


@dataclass
class Cell:
    x: torch.Tensor
    w: torch.Tensor
    reference: torch.Tensor
    oracle: torch.Tensor
    bound: ForwardBound | None
    learn: bool
    """A seed or shape cell: the matrix learns the reference's own error from it."""

    default: bool
    """At the default shape: the bound learned for the timed calls."""


@dataclass
class Tally:
    verifications: int = 0
    failed: int = 0
    comparisons: int = 0
    worst_cell: float = 0.0
    worst_timed: float = 0.0
    first_failure: str = ""
    caught_by: dict[str, int] = field(default_factory=dict)


def _inputs(
    shape: tuple[int, int], seed: int, transform: ValueTransform | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    w = torch.randn(shape[-1], generator=g)
    if transform is not None:
        x = structured_values(x, transform, seed)
        w = structured_values(w[None], transform, seed + 1)[0]
    return x, w


def _cells(task: Task, base: int, rule: str) -> list[Cell]:
    plan: list[tuple[tuple[int, int], int, ValueTransform | None, bool, bool]] = []
    plan += [(DEFAULT_SHAPE, base + s, None, True, True) for s in range(SEEDS)]
    plan += [(shape, base, None, True, False) for shape in OTHER_SHAPES]
    plan += [(DEFAULT_SHAPE, base, t, False, False) for t in VALUE_VARIANTS]
    cells = []
    for shape, seed, transform, learn, default in plan:
        x, w = _inputs(shape, seed, transform)
        oracle, bounds = forward_bounds(lambda: task.reference(x.double(), w.double()))  # noqa: B023 - called at once
        cells.append(
            Cell(
                x,
                w,
                task.reference(x, w),
                oracle,
                bounds[0] if rule == "new" else None,
                learn,
                default,
            )
        )
    return cells


def _verify(
    task: Task,
    candidate: Callable[..., torch.Tensor],
    cells: list[Cell],
    timed: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    tally: Tally,
) -> None:
    own = OwnError(0.0, 0.0)
    bound_element = bound_norm = 0.0
    failed = ""
    for cell in cells:
        result = compare_output(
            candidate(task, cell.x, cell.w),
            cell.reference,
            cell.oracle,
            policy=POLICY,
            bound=cell.bound,
        )
        tally.comparisons += 1
        tally.worst_cell = max(tally.worst_cell, result.error_ratio or 0.0)
        if not result.passed and not failed:
            failed = f"cell: {result.detail}"
        if cell.learn and result.reference_error is not None:
            own = OwnError(
                max(own.norm, result.reference_error),
                max(own.element, result.reference_element_error or 0.0),
            )
        if cell.learn and cell.default and cell.bound is not None:
            bound_element = max(bound_element, float(cell.bound.allowance(torch.float32).max()))
            bound_norm = max(bound_norm, cell.bound.norm_allowance(torch.float32))
    learned = OwnError(own.norm, own.element, bound_element, bound_norm)
    for x, w, reference in timed:
        result: Comparison = compare_output(
            candidate(task, x, w), reference, reference, policy=POLICY, own_error=learned
        )
        tally.comparisons += 1
        tally.worst_timed = max(tally.worst_timed, result.error_ratio or 0.0)
        if not result.passed and not failed:
            failed = f"timed call: {result.detail}"
    tally.verifications += 1
    if failed:
        tally.failed += 1
        where = failed.split(":", 1)[0]
        tally.caught_by[where] = tally.caught_by.get(where, 0) + 1
        tally.first_failure = tally.first_failure or failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--verifications",
        type=int,
        default=12,
        help="simulated verifications per task (default 12)",
    )
    parser.add_argument(
        "--timed", type=int, default=400, help="verified timed calls per verification (default 400)"
    )
    parser.add_argument(
        "--rule",
        choices=("new", "old"),
        default="new",
        help="new: with the forward error bound; old: the reference's own "
        "error alone (before issue 25)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    started = time.monotonic()
    honest = {name: Tally() for name in HONEST}
    wrong = {name: Tally() for name in wrong_candidates()}
    for task in TASKS:
        for v in range(args.verifications):
            base = 1000 * v + 17
            cells = _cells(task, base, args.rule)
            timed = []
            for i in range(args.timed):
                x, w = _inputs(DEFAULT_SHAPE, 10**6 + base * 1000 + i)
                timed.append((x, w, task.reference(x, w)))
            for name, candidate in HONEST.items():
                _verify(task, candidate, cells, timed, honest[name])
            for name, candidate in wrong_candidates().items():
                _verify(task, candidate, cells, timed, wrong[name])
    print(
        f"rule: {args.rule}; {args.verifications} verifications per task x {len(TASKS)} "
        f"tasks ({', '.join(t.name for t in TASKS)}); each {SEEDS + len(OTHER_SHAPES) + len(VALUE_VARIANTS)} "
        f"cells + {args.timed} timed calls; limit {POLICY.factor:g}"
    )
    print(f"{'candidate':24} {'failed':>10} {'worst cell':>11} {'worst timed':>12}  caught by")
    for label, tallies in (("honest", honest), ("wrong", wrong)):
        for name, t in tallies.items():
            print(
                f"{label + ':' + name:24} {t.failed:>4} / {t.verifications:<4}"
                f"{t.worst_cell:>11.3g} {t.worst_timed:>12.3g}  {t.caught_by or '-'}"
            )
    total = sum(t.verifications for t in honest.values())
    false_alarms = sum(t.failed for t in honest.values())
    comparisons = sum(t.comparisons for t in honest.values())
    upper = (3.0 / total) if false_alarms == 0 else float("nan")
    print(
        f"honest: {false_alarms} false alarms in {total} verifications ({comparisons} "
        f"comparisons); 95% upper bound on the rate per verification: "
        f"{upper:.2g} (rule of three)"
        if false_alarms == 0
        else f"honest: {false_alarms} false alarms in {total} verifications: rate "
        f"{false_alarms / total:.3g}"
    )
    worst = max(max(t.worst_cell, t.worst_timed) for t in honest.values())
    print(
        f"honest headroom: the worst ratio of any honest comparison is {worst:.3g} "
        f"(limit {POLICY.factor:g}), {POLICY.factor / worst if worst else math.inf:.3g}x below"
    )
    for name, t in {**honest, **wrong}.items():
        if t.first_failure and name in honest:
            print(f"  first false alarm ({name}): {t.first_failure[:300]}")
    print(f"{time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
