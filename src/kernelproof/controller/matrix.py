"""Running the correctness matrix: every shape group and variant, through both workers.

The controller keeps the reference's outputs and the float64 oracle, and compares the
candidate's outputs itself. Whatever the candidate worker says about correctness is ignored.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from kernelproof.checks.degenerate import DefaultCall
from kernelproof.checks.forward_error import ForwardBound
from kernelproof.checks.observations import findings_from_observations
from kernelproof.checks.op_policy import CallOps
from kernelproof.checks.oracle import ORACLE_FALLBACK_EPS, fallback_own_error
from kernelproof.checks.tolerance import Comparison, OwnError, TolerancePolicy, compare_output
from kernelproof.protocol.messages import head_and_tail
from kernelproof.protocol.requests import PrepareReply, RunReply, RunRequest, SettleRequest
from kernelproof.schema import (
    CorrectnessTest,
    Finding,
    FindingCheck,
    InputVariant,
    OutputComparison,
    Severity,
    TestOutcome,
    ValueTransform,
    VariantKind,
    Verdict,
)
from kernelproof.schema.envelope import CallSignature
from kernelproof.tasks.saved_inputs import given_slots
from kernelproof.tasks.variants import ShapeGroup
from kernelproof.workers.pair import WorkerPair, prepare_request
from kernelproof.workers.process import DeathCause, Response, WorkerDeath

#: Candidate worker restarts allowed after crashes on non-default variants. Each restart
#: rebuilds the candidate, so a kernel that crashes everywhere must not cost minutes per cell.
MAX_CANDIDATE_RESTARTS = 3


#: How much wider the tolerance factor is on inputs at the dtype's extremes (see
#: MatrixRunner._policy_for).
EXTREME_VALUE_SLACK = 30.0

#: The value transforms at the dtype's extremes (wide-range reaches the largest-finite
#: variant's magnitudes in part of its elements).
EXTREME_VALUE_TRANSFORMS = frozenset(
    {ValueTransform.DENORMAL, ValueTransform.LARGEST, ValueTransform.WIDE_RANGE}
)


#: Share of the per-call timeout a cell sized by memory (past 2**24 or 2**31 elements) may be
#: predicted to take before it is skipped: such a cell exists to test an index width, and a
#: candidate that runs an interpreter (Triton's on CPU: about a millisecond per block) would
#: hang there for minutes and be called broken for being honest but slow.
MEMORY_SIZED_CALL_SHARE = 0.25


#: One checked call in this many runs without the op recorder (see MatrixRunner._run_variant).
UNRECORDED_EVERY = 4


def _recorded(variant: InputVariant) -> bool:
    """Whether the candidate's ops are recorded on this call: a fixed function of the
    variant's seed and name, which the candidate never sees, so that it cannot predict it.
    Calls at the default shape's first seed are always recorded (the op audit's reference)."""
    if variant.name == "seed:0":
        return True
    digest = hashlib.sha256(f"{variant.name}:{variant.seed}".encode()).digest()
    return digest[0] % UNRECORDED_EVERY != 0


class TaskFailure(Exception):
    """The reference cannot run the default shape: the task is at fault (verdict ``error``)."""


class CandidateBroken(Exception):
    """The candidate cannot run the default shape at all (verdict ``broken``)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


@dataclass
class MatrixResult:
    tests: list[CorrectnessTest] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    weights: dict[str, Any] = field(default_factory=dict)
    calls: list[CallOps] = field(default_factory=list)
    """Ops recorded on every compared call, for the op audit."""
    module_mode: str | None = None
    """The reference's module mode at the default shape (``train``, ``eval``, ``mixed``)."""
    default_calls: list[DefaultCall] = field(default_factory=list)
    """The reference's outputs and oracle on each seed of the default shape, for the cheap
    adequacy check (:mod:`kernelproof.checks.degenerate`)."""
    signatures: dict[str, CallSignature] = field(default_factory=dict)
    """Per compared cell (its variant's name), the signature of its inputs as the reference
    worker read them: the report's envelope is built from those of the passed cells."""


@dataclass
class MatrixRunner:
    """Runs shape groups one after the other; each group builds both models once."""

    pair: WorkerPair
    policy: TolerancePolicy
    init_seed: int
    result: MatrixResult = field(default_factory=MatrixResult)
    restarts: int = 0
    candidate_ready_for: dict[str, int] | None = None
    one_thread_sample: bool = True
    """Repeat the default shape's first seed at one thread (the matrix runs at the machine's
    thread count); once, after the first default-shape group that holds a seed."""
    _one_thread_sampled: bool = False

    own_errors: dict[int, OwnError] = field(default_factory=dict)
    """Per output, the reference's largest own error (against the oracle) on seed and shape
    variants: the tolerance of stress variants, which skip the float64 oracle."""
    bounds: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    """Per shape group (its label) and output, the largest forward error bound learned on its
    seed and shape cells: (one element's, the RMS), absolute. Timed calls of that shape are
    compared with the reference's timed outputs within twice these."""
    bound_per_growth: dict[int, tuple[float, float]] = field(default_factory=dict)
    """Per output, the largest learned bound divided by its group's growth over the default
    shape: stress shapes (no oracle, so no bound of their own) take it times their growth."""
    default_knobs: dict[str, int] = field(default_factory=dict)
    saved_arguments: list[Any] | None = None
    """The arguments of ``verify --inputs``, for the ``saved`` cell."""
    first_outputs: list[Any] | None = None
    oracle_fallback_noted: bool = False
    """The candidate's outputs on the first seed, to compare repeated runs with."""
    reference_ahead: ThreadPoolExecutor | None = None
    """Asks the reference for the next cell while the candidate runs this one."""
    held_comparison: Callable[[], None] | None = None
    """The last cell's comparison, held back to run while the candidate computes the next
    cell (on two cores the two overlap); run before anything else is recorded, so the report
    lists cells in matrix order."""

    stop_after: Callable[[MatrixResult], bool] | None = None
    """Asked after every cell with the results so far: True ends the matrix there (fail-fast
    scoring, a deadline). The first cell is then compared before it returns, so that the
    first input can decide on its own; later comparisons still overlap the next call."""

    stopped: bool = False
    """The matrix ended early because :attr:`stop_after` said so."""

    call_timeout_s: float = 120.0
    """The per-call timeout the workers run under (``call_timeout_s``)."""

    slowness: tuple[float, float, str] | None = None
    """How many times the reference's call time the candidate's calls take, on the
    controller's own clock (a request's round trip, probes included), measured at the shape
    cell where the reference's call took longest so far: (reference's call s, ratio, cell)."""

    def run(self, groups: list[ShapeGroup]) -> MatrixResult:
        try:
            for group in groups:
                if self.stopped:
                    break
                self._run_group(group)
        finally:
            if self.reference_ahead is not None:
                self.reference_ahead.shutdown()
                self.reference_ahead = None
            self._compare_held()
            self._settle_candidate()
        return self.result

    def _compare_held(self) -> None:
        held, self.held_comparison = self.held_comparison, None
        if held is not None:
            held()

    def _settle_candidate(self) -> None:
        """Collect what the candidate's deferred probes found after its last reply."""
        if self.pair.candidate is None or self.pair.candidate_death is not None:
            return
        self._observe(self.pair.ask_candidate(SettleRequest()), None)

    # -- one group -------------------------------------------------------------------------

    def _run_group(self, group: ShapeGroup) -> None:
        handover = self.pair.prepare(group.knobs, self.init_seed)
        prepared = self._reference_prepared(group, handover.reference)
        if prepared is None or handover.candidate is None:
            return
        names, weights = prepared
        if not self._candidate_prepared(group, handover.candidate):
            return
        variants = list(group.variants)
        ahead: Future[Response] | None = None
        for position, variant in enumerate(variants):
            reference = ahead.result() if ahead is not None else self._ask_reference(group, variant)
            ahead = None
            if position + 1 < len(variants) and reference.death is None:
                # The reference computes the next cell while the candidate computes this
                # one: the two workers overlap, as the comparison overlaps the candidate.
                ahead = self._ahead().submit(self._ask_reference, group, variants[position + 1])
            try:
                self._run_variant(group, variant, names, weights, reference=reference)
                if self._should_stop():
                    if ahead is not None:
                        ahead.result()
                    return
            except BaseException:
                if ahead is not None:  # its reply is collected before anything else is asked
                    ahead.result()
                raise
        if group.is_default and self.one_thread_sample and not self._one_thread_sampled:
            # The matrix runs at the machine's thread count; a sample of it again at one
            # thread, for kernels whose parallel and serial paths differ.
            first = next((v for v in group.variants if v.kind is VariantKind.SEED), None)
            if first is not None:
                self._one_thread_sampled = True  # the default shape may run in two parts
                single = InputVariant(
                    name=f"{first.name}@1-thread", kind=VariantKind.SEED, seed=first.seed
                )
                self._run_variant(group, single, names, weights, threads=1)

    def _should_stop(self) -> bool:
        """Whether :attr:`stop_after` ends the matrix after this cell (see its docstring)."""
        if self.stop_after is None:
            return False
        if len(self.result.tests) == 0:
            self._compare_held()  # the first input decides on its own
        self.stopped = self.stop_after(self.result)
        return self.stopped

    def _prepare_reference(self, group: ShapeGroup) -> tuple[list[str], list[Any]] | None:
        return self._reference_prepared(
            group, self.pair.ask_reference(prepare_request(group.knobs, self.init_seed))
        )

    def _reference_prepared(
        self,
        group: ShapeGroup,
        response: Response[PrepareReply],
    ) -> tuple[list[str], list[Any]] | None:
        """The reference's weights once built at ``group``; None when it rejects the shape
        (its cells skipped), :class:`TaskFailure` at the default shape."""
        if response.ok:
            prepared = response.data
            if group.is_default:
                self.result.module_mode = prepared.module_mode
            return list(prepared.state_names), response.tensors
        reason = response.failure
        if group.is_default:
            raise TaskFailure(f"the reference cannot be constructed at its default shape: {reason}")
        self._skip_all(group, f"the reference rejects this shape: {reason}")
        return None

    def _prepare_candidate(self, group: ShapeGroup, names: list[str], weights: list[Any]) -> bool:
        return self._candidate_prepared(
            group,
            self.pair.ask_candidate(prepare_request(group.knobs, self.init_seed, names), weights),
        )

    def _candidate_prepared(self, group: ShapeGroup, response: Response[PrepareReply]) -> bool:
        """Whether the candidate was built at ``group`` (its failure recorded if not)."""
        # Also when it failed: the reply carries what the last call's deferred probes found.
        self._observe(response, None)
        if response.ok:
            self.candidate_ready_for = group.knobs
            if group.is_default:
                self.result.weights = response.data.weights
            return True
        if group.is_default:
            raise CandidateBroken(
                broken_finding(
                    FindingCheck.CONSTRUCTOR,
                    "the candidate cannot be constructed with the reference's init inputs",
                    response,
                )
            )
        outcome = TestOutcome.CRASHED if response.death else TestOutcome.RAISED
        for variant in group.variants:
            self._record(variant, outcome, f"constructor: {response.failure}")
        if response.death:
            self.candidate_ready_for = None
        return False

    def _ahead(self) -> ThreadPoolExecutor:
        if self.reference_ahead is None:
            self.reference_ahead = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="kernelproof-reference"
            )
        return self.reference_ahead

    def _given(self, variant: InputVariant) -> tuple[list[dict[str, Any]] | None, list[Any]]:
        return (
            given_slots(self.saved_arguments)
            if variant.kind is VariantKind.SAVED and self.saved_arguments is not None
            else (None, [])
        )

    def _ask_reference(
        self, group: ShapeGroup, variant: InputVariant, threads: int | None = None
    ) -> Response:
        given, tensors = self._given(variant)
        # Past 2x the float64 oracle costs more than it tells: compare with the reference.
        return self.pair.ask_reference(
            RunRequest(
                variant=variant,
                threads=threads,
                oracle=not group.stress,
                oracle_fallback=True,
                forward_bound=not group.stress,
                given=given,
            ),
            tensors,
        )

    def _run_variant(
        self,
        group: ShapeGroup,
        variant: InputVariant,
        names: list[str],
        weights: list[Any],
        threads: int | None = None,
        reference: Response | None = None,
    ) -> None:
        """One cell: ``reference`` is the reference's answer when it was asked ahead."""
        given, tensors = self._given(variant)
        if reference is None:
            reference = self._ask_reference(group, variant, threads)
        if not reference.ok:
            if group.is_default and variant.kind is VariantKind.SEED:
                raise TaskFailure(f"the reference fails on its default inputs: {reference.failure}")
            self._record(
                variant,
                TestOutcome.SKIPPED,
                f"the reference rejects this input: {reference.failure}",
            )
            if reference.death:
                self._prepare_reference(group)
            return
        if self.candidate_ready_for != group.knobs and not self._recover_candidate(
            group, names, weights
        ):
            self._record(variant, TestOutcome.SKIPPED, "not run: the candidate crashed too often")
            return
        reference_s = reference.data.call_s or 0.0
        if group.device_sized and self._too_slow_for(variant, reference_s):
            return
        delay = 2 * reference_s
        # The candidate's profiler runs on most calls but not on all: with it off on some
        # checked calls too, "profiler off" no longer tells a candidate it is being timed.
        asked = time.monotonic()
        submitted = self.pair.submit_candidate(
            RunRequest(
                variant=variant,
                threads=threads,
                record_ops=_recorded(variant),
                stability_delay_s=delay,
                given=given,
                defer_probes=True,
            ),
            tensors,
        )
        try:
            self._compare_held()
        finally:  # the reply is collected whatever the comparison did: replies come in order
            candidate = self.pair.collect_candidate(submitted)
        if variant.kind is VariantKind.SHAPE and candidate.ok:
            self._learn_slowness(variant, reference_s, time.monotonic() - asked)
        self._observe(candidate, variant.name)
        if not candidate.ok:
            self._candidate_failed(group, variant, candidate)
            return
        self.held_comparison = partial(self._compare, variant, reference, candidate, group)

    def _learn_slowness(self, variant: InputVariant, reference_s: float, wall_s: float) -> None:
        if reference_s > 0 and (self.slowness is None or reference_s >= self.slowness[0]):
            self.slowness = (reference_s, wall_s / reference_s, variant.name)

    def _too_slow_for(self, variant: InputVariant, reference_s: float) -> bool:
        """Whether a cell sized by memory would take the candidate more than
        :data:`MEMORY_SIZED_CALL_SHARE` of the call timeout, predicted from its slowness at the
        largest shape cell that ran (the controller's clock, not the candidate's word). Such a
        cell is skipped with a ``warn`` naming the prediction, never silently."""
        if self.slowness is None:
            return False
        _, ratio, where = self.slowness
        predicted = reference_s * ratio
        limit = MEMORY_SIZED_CALL_SHARE * self.call_timeout_s
        if predicted <= limit:
            return False
        message = (
            f"not run: the candidate took {ratio:.3g}x the reference's time at {where} "
            f"(the controller's clock), so this call would take ~{predicted:.0f} s, over "
            f"{limit:.0f} s ({MEMORY_SIZED_CALL_SHARE:.0%} of call_timeout_s)"
        )
        self._record(variant, TestOutcome.SKIPPED, message)
        self.result.findings.append(
            Finding(
                check=FindingCheck.SIZING,
                severity=Severity.WARN,
                variant=variant.name,
                message=f"{variant.name} (sized past 2**24 or 2**31 elements) {message}: the "
                "index widths there are not judged",
                evidence={"predicted_s": predicted, "slowness": ratio, "measured_at": where},
            )
        )
        return True

    # -- outcomes --------------------------------------------------------------------------

    def _candidate_failed(
        self, group: ShapeGroup, variant: InputVariant, response: Response
    ) -> None:
        is_default_call = group.is_default and variant.kind is VariantKind.SEED
        out_of_memory = (
            response.reply is not None
            and response.reply.error is not None
            and (response.reply.error.is_out_of_memory)
        )
        if is_default_call and (response.death or out_of_memory or variant.name == "seed:0"):
            raise CandidateBroken(
                broken_finding(
                    FindingCheck.CRASH if response.death else FindingCheck.CALL,
                    "the candidate fails on the task's default inputs",
                    response,
                )
            )
        memory_death = (
            response.death is not None and response.death.cause is DeathCause.OUT_OF_MEMORY
        )
        if group.stress and (out_of_memory or memory_death):
            # A size kernelproof chose past 2x: needing more memory than the budget there is a
            # limit of the machine, stated loudly, not a wrong answer or a crash of the kernel.
            self._record(
                variant,
                TestOutcome.RAISED,
                f"out of memory at a stress size kernelproof chose: {response.failure}",
                death=response.death,
            )
            if response.death:
                self.candidate_ready_for = None
            return
        if response.death or out_of_memory:
            self._record(variant, TestOutcome.CRASHED, response.failure, death=response.death)
            self.candidate_ready_for = None
            if response.death:
                self.candidate_ready_for = None
            return
        self._record(variant, TestOutcome.RAISED, response.failure)

    def _compare(
        self, variant: InputVariant, reference: Response, candidate: Response, group: ShapeGroup
    ) -> None:
        ref_data = reference.data
        cand_data = candidate.data
        if ref_data.signature is not None:
            self.result.signatures[variant.name] = CallSignature.model_validate(ref_data.signature)
        ref_described = [d for d in ref_data.outputs if d.get("kind") == "tensor"]
        count = len(ref_described)
        ref_outputs = reference.tensors[:count]
        oracle_outputs = reference.tensors[count : count + ref_data.oracle_count]
        if group.is_default:
            self.default_knobs = group.knobs
            if variant.kind is VariantKind.SEED:
                self.result.default_calls.append(
                    DefaultCall(variant.seed, ref_outputs, oracle_outputs)
                )
        if group.stress:
            oracle_outputs = ref_outputs
        fallback = ref_data.oracle_fallback
        if fallback and not group.stress:
            self._note_oracle_fallback(str(fallback), variant)
        cand_described = cand_data.outputs
        cand_outputs = candidate.tensors
        timing = {"candidate_s": cand_data.call_s, "reference_s": ref_data.call_s}
        if cand_data.ops is not None and ref_data.ops is not None:
            self.result.calls.append(CallOps(variant.name, cand_data.ops, ref_data.ops))
        if len(cand_described) != count or len(cand_outputs) != count:
            kinds = [d.get("kind") for d in cand_described]
            self._record(
                variant,
                TestOutcome.FAILED,
                f"wrong number or kind of outputs: candidate returned {kinds}, the "
                f"reference returns {count} tensor(s)",
                **timing,
            )
            return
        comparisons: list[OutputComparison] = []
        messages: list[str] = []
        bounds = [] if group.stress or fallback else forward_bounds_of(reference, ref_data)
        for index, (cand, ref, oracle) in enumerate(zip(cand_outputs, ref_outputs, oracle_outputs)):
            own_error = (
                self._own_error(index, group)
                if group.stress
                else fallback_own_error(ref)
                if fallback
                else None
            )
            bound = bounds[index] if index < len(bounds) else None
            result = compare_output(
                cand,
                ref,
                oracle,
                policy=self._policy_for(variant),
                planted=variant.planted_special_values,
                own_error=own_error,
                bound=bound,
            )
            if own_error is None and variant.kind in (VariantKind.SEED, VariantKind.SHAPE):
                self._learn_own_error(index, result)
                if bound is not None:
                    self._learn_bound(group, index, bound, ref.dtype)
            comparisons.append(_output_comparison(index, result))
            if not result.passed:
                messages.append(f"output {index}: {result.detail}")
            for note in result.notes:
                if note.severity is not Severity.FAIL:
                    self.result.findings.append(
                        Finding(
                            check=note.check,
                            severity=note.severity,
                            message=note.message,
                            evidence={"count": note.count},
                            variant=variant.name,
                        )
                    )
        if variant.name == "seed:0":
            self.first_outputs = cand_outputs
        elif variant.kind is VariantKind.REPEAT and self.first_outputs is not None:
            self._check_repeat(variant, cand_outputs)
        ratios = [c.error_ratio for c in comparisons if c.error_ratio is not None]
        passed = all(c.passed for c in comparisons)
        self.result.tests.append(
            CorrectnessTest(
                variant=variant,
                seed=variant.seed,
                outcome=TestOutcome.PASSED if passed else TestOutcome.FAILED,
                error_ratio=max(ratios) if ratios else None,
                outputs=comparisons,
                message="; ".join(messages),
                **timing,
                compared_with="reference" if group.stress else "oracle",
            )
        )

    def _note_oracle_fallback(self, reason: str, variant: InputVariant) -> None:
        if self.oracle_fallback_noted:
            return
        self.oracle_fallback_noted = True
        self.result.findings.append(
            Finding(
                check=FindingCheck.ORACLE,
                severity=Severity.WARN,
                variant=variant.name,
                message=f"no float64 oracle: the reference fails in float64 ({reason}); outputs are "
                f"compared with the reference in its own dtype, taking its own error as "
                f"{ORACLE_FALLBACK_EPS:g} units of the dtype's epsilon (a wider tolerance). "
                "Make forward work in float64 (no hard-coded dtypes) for the oracle check",
                evidence={"reason": reason},
            )
        )

    def _policy_for(self, variant: InputVariant) -> TolerancePolicy:
        """Values at the dtype's extremes (subnormals, near the largest finite value) lose
        mantissa bits in any reformulation: an honest attention that scales Q before the
        product erred 17.5x the fused reference's own error on subnormal inputs. There the
        factor is :data:`EXTREME_VALUE_SLACK` times wider; what these variants exist to catch
        (flush-to-zero, overflow to Inf) is off by orders of magnitude or non-finite."""
        if self.policy.mode == "oracle" and variant.value in EXTREME_VALUE_TRANSFORMS:
            return replace(self.policy, factor=self.policy.factor * EXTREME_VALUE_SLACK)
        return self.policy

    def _learn_own_error(self, index: int, result: Comparison) -> None:
        if result.reference_error is None or result.reference_element_error is None:
            return
        known = self.own_errors.get(index, OwnError(0.0, 0.0))
        self.own_errors[index] = OwnError(
            max(known.norm, result.reference_error),
            max(known.element, result.reference_element_error),
        )

    def _learn_bound(self, group: ShapeGroup, index: int, bound: ForwardBound, dtype: Any) -> None:
        element = float(bound.allowance(dtype).max()) if bound.magnitude.numel() else 0.0
        norm = bound.norm_allowance(dtype) if bound.magnitude.numel() else 0.0
        if not (math.isfinite(element) and math.isfinite(norm)):
            return
        known = self.bounds.setdefault(group.label, {}).get(index, (0.0, 0.0))
        self.bounds[group.label][index] = (max(known[0], element), max(known[1], norm))
        growth = max(self._growth(group), 1.0)
        reach = self.bound_per_growth.get(index, (0.0, 0.0))
        self.bound_per_growth[index] = (
            max(reach[0], element / growth),
            max(reach[1], norm / growth),
        )

    def _growth(self, group: ShapeGroup) -> float:
        """How many times its largest knob is over the default shape's (at least 1)."""
        return max(
            (
                value / max(self.default_knobs.get(name, value), 1)
                for name, value in group.knobs.items()
            ),
            default=1.0,
        )

    def _own_error(self, index: int, group: ShapeGroup) -> OwnError:
        """The reference's own error at a stress shape, derived from the smaller variants:
        their largest, times the square root of the growth (rounding error of a sum grows
        with the square root of its length). The forward error bound (what any correct order
        may lose) is extrapolated linearly: the bound of a sum or a product grows with the
        length it reduces over (a sequential float32 sum of 40961 terms errs 20x what it errs
        over 2048), and a wrapped index or a short scratch buffer is off by far more."""
        known = self.own_errors.get(index, OwnError(0.0, 0.0))
        growth = max(self._growth(group), 1.0)
        scale = growth**0.5
        reach = self.bound_per_growth.get(index, (0.0, 0.0))
        return OwnError(
            known.norm * scale,
            known.element * scale,
            bound_element=reach[0] * growth,
            bound_norm=reach[1] * growth,
        )

    def _check_repeat(self, variant: InputVariant, outputs: list[Any]) -> None:
        """Identical inputs, different answers: a race or nondeterminism (HACKS row 21).
        Within tolerance it is information; beyond it, the repeat's own comparison fails."""
        assert self.first_outputs is not None
        spreads = [_relative_spread(a, b) for a, b in zip(self.first_outputs, outputs)]
        if any(s > 0 for s in spreads):
            self.result.findings.append(
                Finding(
                    check=FindingCheck.NONDETERMINISM,
                    severity=Severity.INFO,
                    message="identical inputs gave different outputs across runs (max relative "
                    f"difference {max(spreads):.3g}); see the repeat variants' error ratios",
                    evidence={"relative_spread": max(spreads)},
                    variant=variant.name,
                )
            )

    def _record(
        self,
        variant: InputVariant,
        outcome: TestOutcome,
        message: str,
        death: WorkerDeath | None = None,
        **timing: Any,
    ) -> None:
        self._compare_held()
        self.result.tests.append(
            CorrectnessTest(
                variant=variant,
                seed=variant.seed,
                outcome=outcome,
                message=message[:1000],
                **timing,
            )
        )

    def _skip_all(self, group: ShapeGroup, message: str) -> None:
        for variant in group.variants:
            self._record(variant, TestOutcome.SKIPPED, message)

    def _observe(self, response: Response, variant: str | None) -> None:
        if response.reply is not None:
            self.result.findings += findings_from_observations(
                response.reply.observations, variant=variant
            )

    # -- recovery --------------------------------------------------------------------------

    def _recover_candidate(self, group: ShapeGroup, names: list[str], weights: list[Any]) -> bool:
        if self.restarts >= MAX_CANDIDATE_RESTARTS:
            return False
        self.restarts += 1
        if self.pair.candidate_death is not None:
            built = self.pair.start_candidate()
            self._observe(built, "build")
            if not built.ok:
                return False
        response = self.pair.ask_candidate(
            prepare_request(group.knobs, self.init_seed, names), weights
        )
        self._observe(response, None)
        if response.ok:
            self.candidate_ready_for = group.knobs
        return response.ok


def _relative_spread(a: Any, b: Any) -> float:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return float("inf")
    if torch.equal(a, b) or (
        a.is_floating_point() and bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    ):
        return 0.0
    if not a.is_floating_point():
        return float((a != b).float().mean())
    a64, b64 = a.double(), b.double()
    finite = torch.isfinite(a64) & torch.isfinite(b64)
    scale = float(a64[finite].abs().max()) if bool(finite.any()) else 1.0
    return float((a64 - b64)[finite].abs().max()) / (scale or 1.0) if bool(finite.any()) else 1.0


def _output_comparison(index: int, result: Comparison) -> OutputComparison:
    return OutputComparison(
        index=index,
        error_ratio=result.error_ratio,
        candidate_error=result.candidate_error,
        reference_error=result.reference_error,
        floor=result.floor,
        passed=result.passed,
        detail=result.detail,
    )


def forward_bounds_of(response: Response, data: RunReply) -> list[ForwardBound | None]:
    """The forward error bounds a reference reply carries after everything else (asked with
    ``forward_bound``), one per oracle output (None: unbounded)."""
    depths = data.bound_depths
    if not depths or len(response.tensors) < 2 * len(depths):
        return []
    tensors = response.tensors[len(response.tensors) - 2 * len(depths) :]
    bounds: list[ForwardBound | None] = []
    for i, depth in enumerate(depths):
        systematic, magnitude = tensors[2 * i], tensors[2 * i + 1]
        bounds.append(
            None
            if depth is None or systematic.shape != magnitude.shape
            else ForwardBound(systematic, magnitude, int(depth))
        )
    return bounds


def broken_finding(check: FindingCheck, what: str, response: Response) -> Finding:
    evidence: dict[str, Any] = {}
    if response.death is not None:
        evidence = {
            "cause": response.death.cause.value,
            "exit_code": response.death.exit_code,
            "log_tail": response.death.log_tail[-1500:],
        }
    elif response.reply is not None and response.reply.error is not None:
        evidence = {
            "error_type": response.reply.error.type,
            "traceback": response.reply.error.traceback[-2500:],
        }
    return Finding(
        check=check,
        severity=Severity.FAIL,
        forces=Verdict.BROKEN,
        message=head_and_tail(f"{what}: {response.failure}", 1200),
        evidence=evidence,
    )
