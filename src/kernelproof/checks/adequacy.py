"""The task-adequacy audit: feed mutants of the true output through the comparator.

A task is only as good as its comparator's power to tell right from wrong on the task's own
outputs. When the outputs are tiny, a fixed ``atol`` lets ``return zeros`` pass; when an output
equals its input, a kernel that does nothing passes. So the audit builds, from the float64
oracle of each output, mutants that a correct comparator must reject:

* ``zeros``; ``constant`` (the output's mean everywhere); ``input-passthrough`` (the first input
  of the output's shape); ``bf16-round-trip`` (for outputs wider than bfloat16);
  ``perturbation`` (Gaussian noise whose RMS is 1% of the output's);

and a control it must accept: ``rounding-noise`` (multiplicative noise of half an ulp of the
working dtype, the error of any honest kernel). Integer and boolean outputs get ``zeros``,
``constant`` and ``off-by-one`` at a few positions, with the exact answer as the control.

Everything here is pure: tensors in, typed results out. The controller
(:mod:`kernelproof.controller.audit_task`) obtains the outputs from a reference worker.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import torch

from kernelproof.checks.tolerance import TolerancePolicy, compare_output
from kernelproof.schema.adequacy import AdequacyReport, MutantResult, OutputAudit

#: Standard deviation of the perturbation mutant, as a share of the output's RMS. 1% is far
#: beyond any honest kernel's error in float32/float16 and about twice bfloat16's rounding
#: error, so a comparator that accepts it cannot see a real bug of that size.
PERTURBATION_FRACTION = 1e-2

#: Width of the rounding-noise control, in units of the dtype's epsilon: uniform in
#: ±eps/2, i.e. half an ulp at the top of a binade. Any honest kernel errs at least this much.
ROUNDING_NOISE_EPS = 1.0

#: Elements an off-by-one mutant changes. A few, not one: one error could hide among the
#: reference's own near-tie disagreements with the oracle, several should not.
OFF_BY_ONE_POSITIONS = 3

#: Bits of the narrowest dtype the bf16 round trip still degrades: it applies to float32 and
#: float64 outputs only (float16 and bfloat16 are no wider than bfloat16).
BF16_ROUND_TRIP_MIN_BITS = 32

#: Fewest elements the bf16 round trip is tried on. A single value rounds almost exactly to
#: bfloat16 by chance about 3% of the time (two values: 0.2%, three: none in 5000 draws), and
#: the mutant would then pass without the comparator being at fault.
BF16_ROUND_TRIP_MIN_ELEMENTS = 4

Must = Literal["reject", "accept"]


@dataclass(frozen=True)
class OutputCase:
    """One reference output with everything its mutants are made from."""

    reference: torch.Tensor
    """The reference's output in its working dtype."""

    oracle: torch.Tensor
    """The same output computed in float64 (integer outputs: the exact answer)."""

    inputs: Sequence[torch.Tensor] = ()
    """The call's input tensors, for the passthrough mutant."""

    seed: int = 0
    index: int = 0

    @property
    def dtype(self) -> torch.dtype:
        return self.reference.dtype

    @cached_property
    def true(self) -> torch.Tensor:
        """The oracle cast to the working dtype: the best answer the dtype can hold."""
        return self.oracle.to(self.dtype)

    @cached_property
    def finite(self) -> torch.Tensor:
        """The oracle's finite elements, in float64 (or as float64 for integer outputs)."""
        values = self.oracle.detach().to(torch.float64).reshape(-1)
        return values[torch.isfinite(values)]

    @property
    def rms(self) -> float:
        return float(self.finite.pow(2).mean().sqrt()) if self.finite.numel() else 0.0

    @property
    def mean(self) -> float:
        return float(self.finite.mean()) if self.finite.numel() else 0.0

    @property
    def std(self) -> float:
        return float(self.finite.std(unbiased=False)) if self.finite.numel() else 0.0

    def generator(self, name: str) -> torch.Generator:
        """A generator private to one mutant of this output, so that results do not depend on
        the order mutants are made in, and the same seed reproduces them."""
        key = zlib.crc32(f"{self.seed}:{self.index}:{name}".encode())
        return torch.Generator().manual_seed(key)


@dataclass(frozen=True)
class Mutant:
    """A way to corrupt (or, for a control, honestly re-derive) the true output."""

    name: str
    must: Must
    make: Callable[[OutputCase], torch.Tensor]
    skip: Callable[[OutputCase], str | None] = lambda case: None
    """Why the mutant does not apply to this output, or ``None`` when it does."""


# -- floating-point mutants ------------------------------------------------------------------


def _zeros(case: OutputCase) -> torch.Tensor:
    return torch.zeros_like(case.reference)


def _constant(case: OutputCase) -> torch.Tensor:
    return torch.full_like(case.reference, case.mean)


def _constant_skip(case: OutputCase) -> str | None:
    if case.reference.numel() >= 2:
        return None
    return "the output has a single element, which is its own mean"


def _passthrough_input(case: OutputCase) -> torch.Tensor | None:
    shape = tuple(case.reference.shape)
    return next((x for x in case.inputs if tuple(x.shape) == shape), None)


def _passthrough(case: OutputCase) -> torch.Tensor:
    found = _passthrough_input(case)
    assert found is not None
    return found.detach().to(device=case.reference.device, dtype=case.dtype).clone()


def _passthrough_skip(case: OutputCase) -> str | None:
    if _passthrough_input(case) is not None:
        return None
    shapes = ", ".join(str(tuple(x.shape)) for x in case.inputs) or "none"
    return f"no input has the output's shape {tuple(case.reference.shape)} (inputs: {shapes})"


def _bf16_round_trip(case: OutputCase) -> torch.Tensor:
    return case.true.to(torch.bfloat16).to(case.dtype)


def _bf16_skip(case: OutputCase) -> str | None:
    if torch.finfo(case.dtype).bits < BF16_ROUND_TRIP_MIN_BITS:
        return f"the output is {_name(case.dtype)}, no wider than bfloat16"
    if case.reference.numel() < BF16_ROUND_TRIP_MIN_ELEMENTS:
        return (
            f"the output has {case.reference.numel()} element(s), too few for a rounding "
            "mutant to differ reliably from the answer"
        )
    if torch.equal(_bf16_round_trip(case), case.true):
        return "every value of the output is exactly representable in bfloat16"
    return None


def _perturbation(case: OutputCase) -> torch.Tensor:
    """Gaussian noise rescaled so that its RMS is exactly the fraction of the output's: with
    few elements, raw draws could by chance be far smaller and pass."""
    oracle = case.oracle.to(torch.float64)
    noise = torch.randn(oracle.shape, generator=case.generator("perturbation"), dtype=torch.float64)
    noise_rms = float(noise.pow(2).mean().sqrt()) if noise.numel() else 1.0
    scale = PERTURBATION_FRACTION * case.rms / max(noise_rms, torch.finfo(torch.float64).tiny)
    return (oracle + scale * noise).to(case.dtype)


def _rounding_noise(case: OutputCase) -> torch.Tensor:
    oracle = case.oracle.to(torch.float64)
    eps = torch.finfo(case.dtype).eps
    uniform = torch.rand(
        oracle.shape, generator=case.generator("rounding-noise"), dtype=torch.float64
    )
    return (oracle * (1.0 + (uniform - 0.5) * ROUNDING_NOISE_EPS * eps)).to(case.dtype)


#: Mutants of floating-point outputs, must-reject first, then the control.
FLOAT_MUTANTS: tuple[Mutant, ...] = (
    Mutant("zeros", "reject", _zeros),
    Mutant("constant", "reject", _constant, _constant_skip),
    Mutant("input-passthrough", "reject", _passthrough, _passthrough_skip),
    Mutant("bf16-round-trip", "reject", _bf16_round_trip, _bf16_skip),
    Mutant("perturbation", "reject", _perturbation),
    Mutant("rounding-noise", "accept", _rounding_noise),
)


# -- integer and boolean mutants -------------------------------------------------------------


def _exact_constant(case: OutputCase) -> torch.Tensor:
    if case.dtype == torch.bool:
        return torch.full_like(case.reference, case.mean >= 0.5)
    if case.dtype.is_complex:
        return torch.full_like(case.reference, complex(case.oracle.to(torch.complex128).mean()))
    info = torch.iinfo(case.dtype)
    return torch.full_like(case.reference, int(min(max(round(case.mean), info.min), info.max)))


def _off_by_one(case: OutputCase) -> torch.Tensor:
    mutant = case.true.clone()
    flat = mutant.view(-1)
    count = min(OFF_BY_ONE_POSITIONS, flat.numel())
    positions = torch.randperm(flat.numel(), generator=case.generator("off-by-one"))[:count]
    if case.dtype == torch.bool:
        flat[positions] = ~flat[positions]
    else:
        flat[positions] = flat[positions] + 1
    return mutant


def _off_by_one_skip(case: OutputCase) -> str | None:
    return "the output is empty" if case.reference.numel() == 0 else None


def _exact(case: OutputCase) -> torch.Tensor:
    return case.true.clone()


#: Mutants of integer and boolean outputs (argmax, masks, counts), then the control.
EXACT_MUTANTS: tuple[Mutant, ...] = (
    Mutant("zeros", "reject", _zeros),
    Mutant("constant", "reject", _exact_constant, _constant_skip),
    Mutant("off-by-one", "reject", _off_by_one, _off_by_one_skip),
    Mutant("exact", "accept", _exact),
)


# -- running mutants through the comparator --------------------------------------------------


def mutants_for(reference: torch.Tensor) -> tuple[Mutant, ...]:
    """The mutant registry that applies to an output of this dtype."""
    return FLOAT_MUTANTS if reference.is_floating_point() else EXACT_MUTANTS


def audit_output(
    reference: torch.Tensor,
    oracle: torch.Tensor,
    inputs: Sequence[Any] = (),
    *,
    policy: TolerancePolicy,
    seed: int = 0,
    index: int = 0,
) -> OutputAudit:
    """Run every applicable mutant of one output through :func:`compare_output`.

    ``reference`` is the reference's output in its working dtype, ``oracle`` the same output
    in float64 (for integer outputs, the exact answer), ``inputs`` the call's inputs (non-tensors
    are ignored). ``seed`` and ``index`` only seed the noise, so a result reproduces.
    """
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    case = OutputCase(
        reference=reference.detach(), oracle=oracle.detach(), inputs=tensors, seed=seed, index=index
    )
    return OutputAudit(
        seed=seed,
        index=index,
        dtype=_name(reference.dtype),
        shape=list(reference.shape),
        oracle_dtype=_name(oracle.dtype),
        rms=case.rms,
        mean=case.mean,
        std=case.std,
        mutants=[_run_mutant(mutant, case, policy) for mutant in mutants_for(reference)],
    )


def _run_mutant(mutant: Mutant, case: OutputCase, policy: TolerancePolicy) -> MutantResult:
    reason = mutant.skip(case)
    if reason is not None:
        return MutantResult(
            name=mutant.name, must=mutant.must, accepted=False, skipped=True, detail=reason
        )
    result = compare_output(mutant.make(case), case.reference, case.oracle, policy=policy)
    detail = result.detail or f"passes the comparator (error ratio {_ratio(result.error_ratio)})"
    return MutantResult(
        name=mutant.name,
        must=mutant.must,
        accepted=result.passed,
        error_ratio=result.error_ratio,
        detail=detail,
    )


# -- from results to a verdict ---------------------------------------------------------------


def adequacy_report(
    outputs: list[OutputAudit], *, policy: TolerancePolicy, task: str, **metadata: Any
) -> AdequacyReport:
    """Assemble the report: the verdict flags and one plain sentence per misbehaving
    (output, mutant) pair. ``metadata`` fills the report's other fields (knobs, seeds...)."""
    problems = find_problems(outputs, policy)
    return AdequacyReport(
        task=task,
        tolerance=policy.describe(),
        outputs=outputs,
        degenerate=any(o.wrongly_accepted for o in outputs),
        too_tight=any(o.wrongly_rejected for o in outputs),
        problems=problems,
        **metadata,
    )


def audit_notes(outputs: list[OutputAudit]) -> list[str]:
    """Context that is not a problem, once per output: skipped mutants and an oracle that is
    not float64 (a task that hard-codes a dtype makes its oracle no better than itself)."""
    notes: dict[str, None] = {}
    multiple = len({o.index for o in outputs}) > 1
    for audit in outputs:
        where = f"output {audit.index}: " if multiple else ""
        floating = audit.dtype.startswith(("float", "bfloat"))
        if floating and audit.oracle_dtype != "float64":
            notes[
                f"{where}the float64 oracle returned {audit.oracle_dtype}: the task computes in "
                "a fixed dtype, so the oracle is no more accurate than the reference and "
                "errors are judged against the reference's own rounding"
            ] = None
        for mutant in audit.mutants:
            if mutant.skipped:
                notes[f"{where}{mutant.name} skipped: {mutant.detail}"] = None
    return list(notes)


def find_problems(outputs: list[OutputAudit], policy: TolerancePolicy) -> list[str]:
    """One sentence per (output index, mutant) the comparator got wrong on any seed: accepted
    mutants first (they make the task degenerate), then rejected controls."""
    seeds = len({o.seed for o in outputs})
    multiple = len({o.index for o in outputs}) > 1
    wrong: dict[tuple[bool, int, str], list[tuple[OutputAudit, MutantResult]]] = {}
    for audit in outputs:
        for mutant in audit.mutants:
            if not mutant.as_expected:
                key = (mutant.must == "accept", audit.index, mutant.name)
                wrong.setdefault(key, []).append((audit, mutant))
    problems = []
    for (_, index, _), cases in sorted(wrong.items(), key=lambda item: item[0][:2]):
        audit, mutant = _closest_call(cases)
        sentence = _sentence(mutant, audit, policy)
        where = f"output {index}: " if multiple else ""
        often = f" (on {len(cases)} of {seeds} seeds)" if len(cases) < seeds else ""
        problems.append(f"{where}{sentence}{often}")
    return problems


def _closest_call(
    cases: list[tuple[OutputAudit, MutantResult]],
) -> tuple[OutputAudit, MutantResult]:
    """The seed that shows the problem most clearly: for an accepted mutant the lowest error
    ratio, for a rejected control the highest."""

    def ratio(case: tuple[OutputAudit, MutantResult]) -> float:
        value = case[1].error_ratio
        return 0.0 if value is None else value

    if cases[0][1].must == "reject":
        return min(cases, key=ratio)
    return max(cases, key=ratio)


def _sentence(mutant: MutantResult, audit: OutputAudit, policy: TolerancePolicy) -> str:
    ratio = _ratio(mutant.error_ratio)
    if mutant.must == "accept":
        return _control_sentence(mutant, audit, policy)
    fixed = policy.mode == "fixed"
    tolerance_fix = (
        "; the fixed atol/rtol is the cause: drop --atol/--rtol (and any profile or task POLICY "
        "that sets them) to use the oracle tolerance"
        if fixed
        else ""
    )
    if mutant.name == "zeros":
        if audit.rms == 0.0:
            return (
                "zeros are accepted: the true output is all zeros (or empty) at the default "
                "shape, so `return zeros` passes; make the default inputs produce a "
                "non-trivial output"
            )
        return (
            "zeros are accepted: the outputs are too small for the comparator to tell "
            f"(rms {audit.rms:.3g}){tolerance_fix or '; scale the task outputs up'}"
        )
    if mutant.name == "constant":
        return (
            f"a constant (the output's mean {audit.mean:.3g} everywhere) is accepted: the "
            f"output barely varies (standard deviation {audit.std:.3g}, rms "
            f"{audit.rms:.3g}){tolerance_fix or '; make the default inputs vary the output'}"
        )
    if mutant.name == "input-passthrough":
        return (
            "the input passed through unchanged is accepted (error ratio "
            f"{ratio}): the output equals an input within tolerance, so a kernel that does "
            "nothing passes; give the task inputs for which the output differs from them"
        )
    if mutant.name == "bf16-round-trip":
        return (
            f"a bfloat16 round trip is accepted (error ratio {ratio}): the comparator "
            f"cannot tell bfloat16 precision from {audit.dtype}, so a kernel that silently "
            f"computes in bfloat16 passes{tolerance_fix}"
        )
    if mutant.name == "perturbation":
        return (
            f"a {PERTURBATION_FRACTION:.0%} perturbation is accepted (error ratio {ratio}): "
            f"the tolerance is looser than {PERTURBATION_FRACTION:.0%} of the output's "
            f"scale (rms {audit.rms:.3g}){tolerance_fix}"
        )
    if mutant.name == "off-by-one":
        return (
            f"off-by-one errors at {OFF_BY_ONE_POSITIONS} positions are accepted (error "
            f"ratio {ratio}): the reference itself disagrees with the exact float64 answer "
            "on some elements, so the exact comparison is relaxed"
        )
    return f"the {mutant.name} mutant is accepted (error ratio {ratio}): {mutant.detail}"


def _control_sentence(mutant: MutantResult, audit: OutputAudit, policy: TolerancePolicy) -> str:
    if mutant.name == "rounding-noise":
        return (
            f"rounding-level noise (half an ulp of {audit.dtype}) is rejected: the "
            "comparator is too tight, so a kernel as accurate as the reference could fail "
            f"({mutant.detail})"
        )
    return f"the {mutant.name} control is rejected: {mutant.detail}"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")
