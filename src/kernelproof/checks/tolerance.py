"""The tolerance model: is the candidate's output as accurate as the reference's own?

A fixed atol/rtol is either too loose (``return zeros`` passes when outputs are tiny) or too
tight (it rejects kernels more accurate than the reference). Instead, both outputs are measured
against a float64 oracle (the reference run in float64 on the same inputs). The candidate
passes when its error is within ``factor`` times the reference's own error, floored by a few
units of the working dtype's epsilon relative to the output's scale. Two criteria must hold:

* norm-wise: ``rms(c - o) / rms(o)``, which sees spread-out error;
* element-wise: ``max |c - o| / (|o| + ELEMENT_SCALE_FRACTION * rms(o))``, which sees a few
  wrong elements that a norm would dilute; the reference's own worst element counts twice
  over (``ELEMENT_REFERENCE_SLACK``), because maxima fluctuate between honest kernels.

The error ratio (the worse of the two, candidate over floored reference) is the number a
reviewer wants: 1 means "as accurate as the reference".

The reference's own error is one sample of what an honest order of operations loses, and a
lucky one where its order happens to be nearly exact on the data (a pairwise sum of equal
values). So where the oracle run also bounded the forward error of *any* evaluation order
(:mod:`kernelproof.checks.forward_error`), that bound widens each limit: an element passes when
it is within ``factor`` times the reference's own error *or* within what any correct order may
lose on these inputs; the RMS error likewise against the bound's RMS. Outputs of timed calls
(compared with the reference's timed output, no oracle) get twice the largest bound learned at
their shape: both sides may be off by it.
"""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import torch

from kernelproof.checks.forward_error import ForwardBound, describe_rules
from kernelproof.schema.checks import FindingCheck
from kernelproof.schema.verdict import Severity

if TYPE_CHECKING:
    from kernelproof.config import Settings

#: Norm-wise floor in units of the dtype's epsilon. float32: 256 eps (3e-5) admits honest
#: kernels that sum serially over ~16k elements (error ~sqrt(n) eps) yet, times the factor,
#: rejects a bf16 round trip (~1e-3) by 10x. Low-precision floors sit below one rounding step
#: so that a 1% perturbation is still rejected there.
NORM_FLOOR_EPS = {
    torch.float64: 256.0,
    torch.float32: 256.0,
    torch.float16: 1.0,
    torch.bfloat16: 0.25,
}

#: Element-wise floor in units of epsilon: looser than the norm floor because a maximum over
#: many elements has heavier tails than an average.
ELEMENT_FLOOR_EPS = {
    torch.float64: 1024.0,
    torch.float32: 1024.0,
    torch.float16: 4.0,
    torch.bfloat16: 1.0,
}

#: The reference's worst element error is taken this many times over before the ratio: a
#: maximum over many elements fluctuates far more between two honest implementations than a
#: norm does. An honest LSTM cell with one fused GEMM erred 3.4x the reference's worst element
#: on inputs scaled by 1e3 (saturated gates amplify rounding in huge pre-activations) while
#: its RMS error was 1.09x. A wrong element is off by orders of magnitude, not by 2x.
ELEMENT_REFERENCE_SLACK = 2.0

#: Element-wise errors are relative to |o| plus this share of the output's RMS, so that
#: elements near zero (where relative error is meaningless) are judged on the output's scale.
ELEMENT_SCALE_FRACTION = 1e-2


@dataclass(frozen=True)
class TolerancePolicy:
    """How outputs are compared: against the oracle (default) or with a fixed atol/rtol."""

    mode: Literal["oracle", "fixed"] = "oracle"
    factor: float = 3.0
    atol: float = 0.0
    rtol: float = 0.0

    @classmethod
    def from_settings(cls, settings: Settings) -> TolerancePolicy:
        """The policy a verification (and the adequacy audit) applies under ``settings``."""
        if settings.tolerance_mode() == "fixed":
            return cls(mode="fixed", atol=settings.atol or 0.0, rtol=settings.rtol or 0.0)
        return cls(mode="oracle", factor=settings.tolerance_factor)

    def describe(self) -> dict[str, Any]:
        if self.mode == "fixed":
            return {
                "mode": "fixed",
                "atol": self.atol,
                "rtol": self.rtol,
                "compared_against": "reference output",
            }
        return {
            "mode": "oracle",
            "factor": self.factor,
            "compared_against": "float64 oracle",
            "norm_floor_eps": {str(k).removeprefix("torch."): v for k, v in NORM_FLOOR_EPS.items()},
            "element_floor_eps": {
                str(k).removeprefix("torch."): v for k, v in ELEMENT_FLOOR_EPS.items()
            },
            "forward_error_bound": describe_rules(),
        }


@dataclass(frozen=True)
class SpecialValueNote:
    """A difference in where non-finite values appear, with its weight."""

    check: FindingCheck
    severity: Severity
    message: str
    count: int


@dataclass(frozen=True)
class Comparison:
    """The verdict on one output tensor."""

    passed: bool
    error_ratio: float | None
    candidate_error: float | None = None
    reference_error: float | None = None
    floor: float | None = None
    detail: str = ""
    notes: list[SpecialValueNote] = field(default_factory=list)
    reference_element_error: float | None = None
    """The reference's worst element-wise error (exact outputs: its share of wrong elements,
    which is what :class:`OwnError` carries for them)."""


@dataclass(frozen=True)
class OwnError:
    """The reference's own error, known from smaller variants, for a variant compared with the
    reference's output instead of a float64 oracle (too large to run in float64)."""

    norm: float
    """Relative RMS error (exact outputs: unused)."""

    element: float
    """Worst element-wise error (exact outputs: the share of elements that differ)."""

    bound_element: float = 0.0
    """The largest absolute forward error bound of one element learned at this shape (0:
    none): the candidate and the reference may each be off by it."""

    bound_norm: float = 0.0
    """The largest RMS of the forward error bound learned at this shape (absolute; 0: none)."""


def compare_output(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    oracle: torch.Tensor,
    *,
    policy: TolerancePolicy,
    planted: bool = False,
    own_error: OwnError | None = None,
    bound: ForwardBound | None = None,
) -> Comparison:
    """Compare one candidate output with the reference and the oracle.

    With ``own_error``, ``oracle`` is the reference's own output (no float64 run) and the
    reference's error against the truth is taken from ``own_error`` instead of measured.
    ``bound``: the oracle's forward error bound for this output, which widens the limit to
    what any correct evaluation order may lose (see the module's docstring)."""
    if tuple(candidate.shape) != tuple(reference.shape):
        return Comparison(
            passed=False,
            error_ratio=None,
            detail=f"wrong output shape: candidate {tuple(candidate.shape)}, "
            f"reference {tuple(reference.shape)}",
        )
    if candidate.dtype != reference.dtype:
        return Comparison(
            passed=False,
            error_ratio=None,
            detail=f"wrong output dtype: candidate {candidate.dtype}, reference {reference.dtype}",
        )
    if not reference.is_floating_point():
        return _compare_exact(candidate, reference, oracle, policy, own_error)
    work = _working_dtype(reference, oracle, own_error, policy)
    c = _scratch(0, candidate, work).copy_(candidate)
    # The reference in the working dtype is needed only where its side is not remembered.
    r = reference if reference.dtype == work else _Lazy(lambda: reference.to(work))
    if oracle is reference:
        o = r = _value(r)
    else:
        o = oracle.to(work)
    comparable: torch.Tensor | None = None  # None: every element
    notes: list[SpecialValueNote] = []
    reference_finite = _derived(
        reference,
        oracle,
        "finite",
        lambda: _all_finite(reference) and (oracle is reference or _all_finite(oracle)),
    )
    if not (reference_finite and _all_finite(candidate)):
        finite_c, finite_r = torch.isfinite(candidate), torch.isfinite(reference)
        r = _value(r)
        notes = _special_value_notes(
            c, r, None if o is r else o, finite_c, finite_r, reference.dtype, planted
        )
        comparable = finite_c & finite_r if o is r else finite_c & finite_r & torch.isfinite(o)
    hard = [n for n in notes if n.severity is Severity.FAIL]
    if policy.mode == "fixed":
        result = _compare_fixed(c, _value(r), comparable, policy)
    else:
        # The reference's side depends on the reference and the oracle alone: a session
        # compares every candidate with the same replayed tensors, so it is computed once.
        measured = own_error is None
        side = (
            _derived(
                reference,
                oracle,
                f"side:{measured}",
                lambda: _ReferenceSide.of(_value(r), o, measured),
            )
            if comparable is None
            else None
        )
        allowance = _allowance(bound, own_error, reference, comparable)
        result = _compare_oracle(
            c,
            _value(r) if side is None else None,
            o,
            comparable,
            policy,
            reference.dtype,
            own_error,
            side,
            allowance,
        )
        if work != torch.float64 and not math.isfinite(result.error_ratio or 0.0):
            # float32 arithmetic overflowed on huge values: the verdict is float64's
            return compare_output(
                candidate,
                reference,
                oracle.double(),
                policy=policy,
                planted=planted,
                own_error=own_error,
                bound=bound,
            )
    if hard:
        detail = "; ".join(n.message for n in hard)
        return Comparison(
            False,
            result.error_ratio,
            result.candidate_error,
            result.reference_error,
            result.floor,
            detail,
            notes,
            result.reference_element_error,
        )
    return Comparison(
        result.passed,
        result.error_ratio,
        result.candidate_error,
        result.reference_error,
        result.floor,
        result.detail,
        notes,
        result.reference_element_error,
    )


@dataclass(frozen=True)
class _Allowance:
    """What any correct order may lose: per element (a tensor, or one absolute value for
    every element) and as an RMS (absolute)."""

    element: torch.Tensor | float
    norm: float


def _allowance(
    bound: ForwardBound | None,
    own_error: OwnError | None,
    reference: torch.Tensor,
    mask: torch.Tensor | None,
) -> _Allowance | None:
    if own_error is not None:
        if own_error.bound_element <= 0.0:
            return None
        # Compared with the reference's output, not the truth: both may be off by the bound.
        return _Allowance(2.0 * own_error.bound_element, 2.0 * own_error.bound_norm)
    if bound is None or tuple(bound.magnitude.shape) != tuple(reference.shape):
        return None
    element = bound.allowance(reference.dtype)
    if mask is not None and not bool(mask.all()):
        element = element[mask]
    return _Allowance(element, bound.norm_allowance(reference.dtype))


def _compare_oracle(
    c: torch.Tensor,
    r: torch.Tensor | None,
    o: torch.Tensor,
    mask: torch.Tensor | None,
    policy: TolerancePolicy,
    dtype: torch.dtype,
    own_error: OwnError | None = None,
    side: _ReferenceSide | None = None,
    allowance: _Allowance | None = None,
) -> Comparison:
    if mask is not None:
        if not bool(mask.any()):
            return Comparison(True, 0.0, 0.0, 0.0, None, "no finite elements to compare")
        if not bool(mask.all()):  # indexing copies: only when something must be left out
            assert r is not None
            c, r, o = c[mask], r[mask], o[mask]
    eps = torch.finfo(dtype).eps
    if side is None:
        assert r is not None
        side = _ReferenceSide.of(r, o, own_error is None)
    scale = side.scale
    # In place on the candidate's working copy (a reused buffer, never the candidate's own
    # tensor): this runs on every cell and every verified timed call, and fresh temporaries
    # of 16 MiB cost more in page faults than in arithmetic.
    error_c = c.sub_(o).abs_()
    norm_c = _rms(error_c) / scale
    denominator = torch.abs(o, out=_scratch(1, o, o.dtype)).add_(ELEMENT_SCALE_FRACTION * scale)
    if own_error is not None:  # ``o`` is the reference itself: its error is known, not measured
        norm_r, elem_r = own_error.norm, own_error.element
    else:
        norm_r, elem_r = side.norm, side.element
    norm_floor = NORM_FLOOR_EPS.get(dtype, 1.0) * eps
    elem_floor = ELEMENT_FLOOR_EPS.get(dtype, 4.0) * eps
    elem_base = max(ELEMENT_REFERENCE_SLACK * elem_r, elem_floor)
    if allowance is None:
        elem_c = float(error_c.div_(denominator).max())
        ratio = max(norm_c / max(norm_r, norm_floor), elem_c / elem_base)
        bound_text = ""
    else:
        # Each element's limit (divided by the factor, so that ``ratio <= factor`` keeps its
        # meaning): the reference's own error at that element, or the bound, the wider.
        worst_abs = float(error_c.max()) if error_c.numel() else 0.0
        limit = denominator.mul_(elem_base)
        if isinstance(allowance.element, torch.Tensor):
            limit = torch.maximum(limit, allowance.element.to(limit.dtype) / policy.factor)
        else:
            limit = limit.clamp_min_(allowance.element / policy.factor)
        elem_ratio = float(error_c.div_(limit.clamp_min_(torch.finfo(limit.dtype).tiny)).max())
        elem_c = elem_ratio * elem_base
        norm_bound = allowance.norm / scale
        ratio = max(norm_c / max(norm_r, norm_floor, norm_bound / policy.factor), elem_ratio)
        worst_bound = (
            float(allowance.element.max())
            if isinstance(allowance.element, torch.Tensor)
            else allowance.element
        )
        bound_text = (
            f"; what any correct evaluation order may lose here (forward error "
            f"bound): relative RMS {norm_bound:.3g}, up to {worst_bound:.3g} on one "
            f"element; the worst element is off by {worst_abs:.3g}"
        )
    passed = ratio <= policy.factor
    detail = (
        ""
        if passed
        else (
            f"error {ratio:.3g}x the limit ({policy.factor:g}x the reference's own error, or the "
            f"forward error bound where wider): relative RMS error {norm_c:.3g} vs the "
            f"reference's {norm_r:.3g}, worst element {elem_c:.3g} vs {elem_r:.3g}{bound_text}"
            if allowance is not None
            else f"error {ratio:.3g}x the reference's own (limit {policy.factor:g}x): relative RMS error "
            f"{norm_c:.3g} vs {norm_r:.3g}, worst element {elem_c:.3g} vs {elem_r:.3g}"
        )
    )
    return Comparison(
        passed, ratio, norm_c, norm_r, norm_floor, detail, reference_element_error=elem_r
    )


def _compare_fixed(
    c: torch.Tensor, r: torch.Tensor, mask: torch.Tensor | None, policy: TolerancePolicy
) -> Comparison:
    if mask is not None:
        if not bool(mask.any()):
            return Comparison(True, 0.0, detail="no finite elements to compare")
        c, r = c[mask], r[mask]
    allowed = policy.atol + policy.rtol * r.abs()
    excess = (c - r).abs() / allowed.clamp_min(torch.finfo(torch.float64).tiny)
    ratio = float(excess.max())
    bad = int((excess > 1).sum())
    passed = bad == 0
    detail = (
        ""
        if passed
        else (
            f"{bad} of {c.numel()} elements differ from the reference by more than "
            f"atol={policy.atol:g} + rtol={policy.rtol:g}*|ref|"
        )
    )
    return Comparison(passed, ratio, float((c - r).abs().max()), 0.0, None, detail)


def _compare_exact(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    oracle: torch.Tensor,
    policy: TolerancePolicy,
    own_error: OwnError | None = None,
) -> Comparison:
    """Integer and boolean outputs: exact, allowing as many disagreements with the oracle as
    the reference itself has (near-ties in an argmax), times the factor."""
    target = oracle.to(reference.dtype) if oracle.dtype != reference.dtype else oracle
    candidate_wrong = int((candidate != target).sum())
    reference_wrong = int((reference != target).sum())
    if own_error is not None:  # the target is the reference: its share of misses is known
        reference_wrong = int(own_error.element * candidate.numel() + 0.5)
    passed = candidate_wrong <= policy.factor * reference_wrong
    ratio = candidate_wrong / max(reference_wrong, 1)
    detail = (
        ""
        if passed
        else (
            f"{candidate_wrong} of {candidate.numel()} elements differ from the exact answer "
            f"(the reference gets {reference_wrong} wrong)"
        )
    )
    return Comparison(
        passed,
        ratio,
        float(candidate_wrong),
        float(reference_wrong),
        None,
        detail,
        reference_element_error=reference_wrong / max(candidate.numel(), 1),
    )


def _working_dtype(
    reference: torch.Tensor,
    oracle: torch.Tensor,
    own_error: OwnError | None,
    policy: TolerancePolicy,
) -> torch.dtype:
    """float64, except where nothing is gained by it: the reference's error is known
    (``own_error``) and the oracle is no more precise than the reference's own output. There
    the differences of float32 (or lower) values are exact to float32's epsilon, far below any
    factor the test applies, and half the memory traffic matters: this path verifies the
    outputs of timed calls (16 MiB per call for the LayerNorm suite task)."""
    if (
        own_error is not None
        and policy.mode != "fixed"
        and oracle.dtype == reference.dtype
        and reference.element_size() <= 4
    ):
        return torch.float32
    return torch.float64


_Derived = TypeVar("_Derived")


@dataclass(frozen=True)
class _ReferenceSide:
    """The reference's half of a comparison: the oracle's scale and the reference's own
    relative RMS and worst element error against it."""

    scale: float
    norm: float
    element: float

    @classmethod
    def of(cls, r: torch.Tensor, o: torch.Tensor, measured: bool) -> _ReferenceSide:
        scale = _rms(o)
        if scale == 0.0:
            scale = 1.0  # an all-zero true output: judge absolute error
        if not measured:
            return cls(scale, 0.0, 0.0)
        error_r = (r - o).abs_()
        denominator = o.abs().add_(ELEMENT_SCALE_FRACTION * scale)
        return cls(scale, _rms(error_r) / scale, float(error_r.div_(denominator).max()))


#: What was derived from a (reference, oracle) pair, by the oracle tensor's id, while it
#: lives: with weak references to both tensors (an id is reused after death) and their version
#: counters, so that an in-place change is never served stale.
_DERIVED: dict[int, tuple[Any, Any, int, int, dict[str, Any]]] = {}
_DERIVED_LOCK = threading.Lock()


def _forget(key: int) -> Callable[[Any], None]:
    def forget(_: Any) -> None:
        with _DERIVED_LOCK:
            _DERIVED.pop(key, None)

    return forget


def _derived(
    reference: torch.Tensor, oracle: torch.Tensor, name: str, compute: Callable[[], _Derived]
) -> _Derived:
    """``compute()``, remembered for the next comparison with the same two tensors (as
    given): a session compares every candidate with the same replayed reference outputs."""
    with _DERIVED_LOCK:
        found = _DERIVED.get(id(oracle))
        if found is not None:
            known_oracle, known, r_version, o_version, values = found
            if not (
                known_oracle() is oracle
                and known() is reference
                and r_version == reference._version
                and o_version == oracle._version
            ):
                found = None
            elif name in values:
                return values[name]
    value = compute()
    try:
        with _DERIVED_LOCK:
            if found is None:
                found = (
                    weakref.ref(oracle, _forget(id(oracle))),
                    weakref.ref(reference),
                    reference._version,
                    oracle._version,
                    {},
                )
                _DERIVED[id(oracle)] = found
            found[4][name] = value
    except TypeError:
        pass  # not weakly referenceable: not remembered
    return value


#: Bytes of a reused comparison buffer at most (per slot and thread); larger outputs get
#: fresh temporaries rather than pinning that much memory for the session's life.
MAX_SCRATCH_BYTES = 64 << 20

_SCRATCH = threading.local()


def _scratch(slot: int, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised tensor shaped like ``like`` in ``dtype``, on the CPU taken from a
    buffer this thread reuses for every comparison (no page faults after the first)."""
    numel = like.numel()
    if like.device.type != "cpu" or numel * torch.finfo(dtype).bits // 8 > MAX_SCRATCH_BYTES:
        return torch.empty(like.shape, dtype=dtype, device=like.device)
    buffers: dict[tuple[int, torch.dtype], torch.Tensor] = _SCRATCH.__dict__.setdefault(
        "buffers", {}
    )
    buffer = buffers.get((slot, dtype))
    if buffer is None or buffer.numel() < numel:
        buffer = buffers[(slot, dtype)] = torch.empty(numel, dtype=dtype)
    return buffer[:numel].view(like.shape)


class _Lazy:
    """A value computed on first use."""

    def __init__(self, compute: Callable[[], torch.Tensor]) -> None:
        self.compute = compute
        self.computed: torch.Tensor | None = None

    def value(self) -> torch.Tensor:
        if self.computed is None:
            self.computed = self.compute()
        return self.computed


def _value(x: torch.Tensor | _Lazy) -> torch.Tensor:
    return x.value() if isinstance(x, _Lazy) else x


def _all_finite(x: torch.Tensor) -> bool:
    """Whether every element is finite, from one reduction: a NaN or an infinity makes the
    sum non-finite (inf - inf is NaN). A float64 sum that overflows on finite values reads as
    "no", which only sends the caller to the element-wise path."""
    if not x.is_floating_point():
        return True
    # In the tensor's own dtype (float32 at least): a sum that converts each element on the
    # way (``dtype=float64``) ran at 4 ns an element, 60x slower on 16 MiB.
    if x.element_size() >= 4:
        return bool(torch.isfinite(x.sum()))
    return bool(torch.isfinite(x.sum(dtype=torch.float32)))


def _rms(x: torch.Tensor) -> float:
    # In the tensor's own dtype (torch sums in cascades: float32's error is ~1e-7 here, far
    # below any factor a test applies), and again in float64 where float32's sum of squares
    # overflowed; converting each element on the way ran 60x slower.
    norm = float(torch.linalg.vector_norm(x))
    if not math.isfinite(norm) and x.dtype != torch.float64:
        norm = float(torch.linalg.vector_norm(x, dtype=torch.float64))
    return norm / max(x.numel(), 1) ** 0.5


#: Share of the dtype's largest finite value by which a true answer may pass it (or fall short
#: of it) and still honestly round either way: a result within a few units in the last place of
#: the edge overflows in one honest order of operations and not in another.
OVERFLOW_MARGIN = 1e-3


def _special_value_notes(
    c: torch.Tensor,
    r: torch.Tensor,
    o: torch.Tensor | None,
    finite_c: torch.Tensor,
    finite_r: torch.Tensor,
    dtype: torch.dtype,
    planted: bool,
) -> list[SpecialValueNote]:
    """Where NaN and Inf sit, judged exactly (issue 25, class 4).

    An element whose true answer is not a finite number of ``dtype`` (the reference gives NaN
    or Inf there and the float64 oracle ``o`` agrees: non-finite, or past the dtype's largest
    value) must be NaN or Inf in the candidate too: a finite number there is a silently wrong
    answer, the "sanitised" output that hides the bug upstream. The reverse, NaN or Inf where
    the reference is finite, is wrong as well. Only where the reference and the oracle disagree
    (the reference overflowed in its working dtype though the answer fits, or the answer sits
    at the dtype's edge) may the candidate give either. Without an independent oracle (``o``
    None: stress sizes, timed outputs) the reference's own classes are the truth.
    """
    if bool(finite_c.all()) and bool(finite_r.all()):
        return []
    if o is None:
        must_be_special = may_be_special = ~finite_r
    else:
        top = torch.finfo(dtype).max
        beyond = ~torch.isfinite(o)
        magnitude = o.abs()
        must_be_special = beyond | (magnitude > top * (1 + OVERFLOW_MARGIN))
        may_be_special = beyond | (magnitude >= top * (1 - OVERFLOW_MARGIN))
    notes = []
    spurious = int((finite_r & ~finite_c & ~may_be_special).sum())
    if spurious:
        notes.append(
            SpecialValueNote(
                FindingCheck.NON_FINITE_OUTPUT,
                Severity.FAIL,
                f"{spurious} element(s) are NaN or Inf where the reference is finite",
                spurious,
            )
        )
    masked = int((~finite_r & finite_c & must_be_special).sum())
    if masked:
        notes.append(
            SpecialValueNote(
                FindingCheck.MASKS_NON_FINITE,
                Severity.FAIL,
                f"{masked} element(s) are finite where the reference gives NaN or Inf (so does the "
                "float64 oracle)"
                + (": the candidate turns bad input into numbers" if planted else ""),
                masked,
            )
        )
    robust = int((~finite_r & finite_c & ~must_be_special).sum())
    if robust:
        notes.append(
            SpecialValueNote(
                FindingCheck.MASKS_NON_FINITE,
                Severity.INFO,
                f"{robust} element(s) are finite where the reference overflowed though the exact "
                "answer fits the dtype (the float64 oracle is finite there)",
                robust,
            )
        )
    both = ~finite_r & ~finite_c
    opposite = both & torch.isinf(c) & torch.isinf(r) & (torch.sign(c) != torch.sign(r))
    flipped = int(opposite.sum())
    if flipped:
        notes.append(
            SpecialValueNote(
                FindingCheck.NON_FINITE_KIND,
                Severity.FAIL,
                f"{flipped} element(s) are infinite with the opposite sign to the reference's",
                flipped,
            )
        )
    kind_differs = both & ~opposite & ~((torch.isnan(c) & torch.isnan(r)) | (c == r))
    differing = int(kind_differs.sum())
    if differing:
        notes.append(
            SpecialValueNote(
                FindingCheck.NON_FINITE_KIND,
                Severity.INFO,
                f"{differing} element(s) are non-finite in both but of a different kind "
                "(NaN against Inf)",
                differing,
            )
        )
    return notes
