"""The report's envelope, built from the matrix's cells and the signatures of their inputs.

The signatures come from the reference worker (trusted task code built the inputs; the
candidate worker built the same ones from the same seed). Only cells that passed contribute;
cells that failed, raised or crashed bound the knob ranges (see
:class:`~kernelproof.schema.envelope.KnobRange` for the rule, applied here).
"""

from __future__ import annotations

from collections.abc import Mapping

from kernelproof.schema.correctness import CorrectnessTest, TestOutcome
from kernelproof.schema.envelope import (
    MAX_RANGE_GAP,
    MIN_RANGE_VALUES,
    CallSignature,
    DimensionBinding,
    Envelope,
    KnobRange,
    TensorSignature,
    integer_line,
)
from kernelproof.schema.variant import VariantKind

#: Outcomes that say the candidate does not hold at a knob value: a range never spans one.
_BAD_OUTCOMES = (TestOutcome.FAILED, TestOutcome.RAISED, TestOutcome.CRASHED)


def build_envelope(
    tests: list[CorrectnessTest],
    signatures: Mapping[str, CallSignature],
    default_knobs: dict[str, int],
) -> Envelope:
    """The envelope of the passed cells. ``signatures`` maps a cell's variant name to the
    signature of its inputs, as the reference worker read them."""
    envelope = Envelope(default_knobs=dict(default_knobs))
    seen: set[CallSignature] = set()
    for test in tests:
        signature = signatures.get(test.variant.name)
        if test.outcome is not TestOutcome.PASSED or signature is None:
            continue
        if signature not in seen:
            seen.add(signature)
            envelope.signatures.append(signature)
            envelope.knobs.append({**default_knobs, **test.variant.knobs})
        if (
            not test.variant.knobs
            and _all_contiguous(signature)
            and (signature not in envelope.templates)
        ):
            envelope.templates.append(signature)
    for knob in default_knobs:
        envelope.ranges.append(
            _knob_range(knob, tests, signatures, default_knobs, envelope.templates)
        )
    return envelope


def _knob_range(
    knob: str,
    tests: list[CorrectnessTest],
    signatures: Mapping[str, CallSignature],
    default_knobs: dict[str, int],
    templates: list[CallSignature],
) -> KnobRange:
    default = default_knobs[knob]
    passed: dict[int, CallSignature | None] = {}
    bad: set[int] = set()
    for test in tests:
        changed = test.variant.knobs
        if changed and set(changed) != {knob}:
            continue  # another knob moved too: says nothing about this one alone
        value = changed.get(knob, default)
        if test.outcome is TestOutcome.PASSED:
            signature = signatures.get(test.variant.name)
            if passed.get(value) is None:
                # Layout variants share the default's knobs but not its contiguous layout.
                usable = signature is not None and _all_contiguous(signature)
                passed[value] = signature if usable else None
        elif test.outcome in _BAD_OUTCOMES and test.variant.kind is VariantKind.SHAPE:
            # Only sizes bound a range: a value or layout variant that raised says nothing
            # about sizes.
            bad.add(value)
    values = sorted(passed)
    if default not in passed:
        return KnobRange(
            knob=knob,
            values=values,
            low=default,
            high=default,
            covered=False,
            reason="the default shape itself did not pass",
        )
    low, high = _grow(default, values, bad)
    span = [v for v in values if low <= v <= high]
    bindings, unbound = _bindings(knob, {v: passed[v] for v in values}, templates)

    def grown(covered: bool, reason: str) -> KnobRange:
        return KnobRange(
            knob=knob,
            values=values,
            low=low,
            high=high,
            bindings=bindings,
            covered=covered,
            reason=reason,
        )

    if unbound:
        return grown(False, unbound)
    if not bindings:
        return grown(False, "no input dimension follows this knob; calls match exactly")
    if len(span) < MIN_RANGE_VALUES or not any(v % 2 and v > 1 for v in span):
        return grown(
            False,
            f"only {len(span)} verified value(s) near the default "
            f"({', '.join(map(str, span))}); a range needs "
            f"{MIN_RANGE_VALUES}, one of them odd, each within "
            f"{MAX_RANGE_GAP:g}x of the next",
        )
    return grown(
        True,
        f"verified at {len(span)} values from {low} to {high}, each within "
        f"{MAX_RANGE_GAP:g}x of the next and of an odd one, none failing "
        "between them",
    )


def _grow(default: int, values: list[int], bad: set[int]) -> tuple[int, int]:
    """The range around ``default`` (see KnobRange's rule)."""
    odd = [v for v in values if v % 2 and v > 1]

    def near_odd(value: int) -> bool:
        return any(max(value, o) <= MAX_RANGE_GAP * min(value, o) for o in odd)

    def admissible(last: int, step: int) -> bool:
        lo, hi = sorted((last, step))
        return (
            hi <= MAX_RANGE_GAP * lo
            and near_odd(step)
            and not any(lo < b < hi or b == step for b in bad)
        )

    position = values.index(default)
    low = high = default
    for step in reversed(values[:position]):
        if not admissible(low, step):
            break
        low = step
    for step in values[position + 1 :]:
        if not admissible(high, step):
            break
        high = step
    return low, high


def _bindings(
    knob: str, cells: dict[int, CallSignature | None], templates: list[CallSignature]
) -> tuple[list[DimensionBinding], str]:
    """The input dimensions that follow ``knob`` over its verified cells, as exact integer
    lines ``size = scale * knob + offset``; or a reason why the knob has no such pattern."""
    if not templates:
        return [], "no contiguous signature at the default shape to vary"
    template = templates[0]
    points: dict[tuple[int, int], dict[int, int]] = {}
    for value, signature in cells.items():
        if signature is None:
            continue
        if not _same_structure(signature, template):
            return [], (
                f"at {knob}={value} the inputs change in rank, dtype or number, not "
                "only in size; calls match exactly"
            )
        for position, arg in enumerate(signature.args):
            if isinstance(arg, TensorSignature):
                for dim, size in enumerate(arg.shape):
                    points.setdefault((position, dim), {})[value] = size
            elif arg != template.args[position]:
                return [], f"a non-tensor argument changes with {knob}; calls match exactly"
    if len({value for value, signature in cells.items() if signature is not None}) < 2:
        return [], f"{knob} was verified at its default value only; calls match exactly"
    bindings = []
    for (position, dim), sizes in sorted(points.items()):
        if len(set(sizes.values())) == 1:
            continue
        line = integer_line(sizes)
        if line is None:
            return [], (
                f"argument {position} dimension {dim} does not follow {knob} linearly "
                f"({sizes}); calls match exactly"
            )
        bindings.append(DimensionBinding(arg=position, dim=dim, scale=line[0], offset=line[1]))
    return bindings, ""


def _same_structure(a: CallSignature, b: CallSignature) -> bool:
    if len(a.args) != len(b.args):
        return False
    for x, y in zip(a.args, b.args):
        if type(x) is not type(y):
            return False
        if (
            isinstance(x, TensorSignature)
            and isinstance(y, TensorSignature)
            and ((x.dtype, x.device, len(x.shape)) != (y.dtype, y.device, len(y.shape)))
        ):
            return False
    return True


def _all_contiguous(signature: CallSignature) -> bool:
    return all(a.contiguous for a in signature.args if isinstance(a, TensorSignature))
