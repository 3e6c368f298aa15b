"""Inferring a candidate's assumptions from the correctness matrix.

A reviewer wants "wrong when dim is odd", not a list of twelve failing cells. For each kind
of bad outcome (wrong, raises, crashes) the failing cells are explained by the simplest rule
that covers all of them and that no passing cell contradicts: a knob's parity or divisibility,
a knob above or below a bound, a knob away from its benchmark value, a value or layout
transform. What no rule explains is listed as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from kernelproof.schema import (
    Assumption,
    CorrectnessTest,
    Finding,
    LayoutTransform,
    TestOutcome,
    ValueTransform,
    VariantKind,
)

#: Divisors tried for "wrong when K is not a multiple of M", smallest first: the smallest
#: divisor that explains every failure is the tightest statement.
DIVISORS = (2, 4, 8, 16, 32, 64, 128, 256)

#: What a bad cell did, as an :class:`Assumption`'s ``kind`` names it.
_FailureKind = Literal["wrong", "raises", "crashes"]

_KIND_OF: dict[TestOutcome, _FailureKind] = {
    TestOutcome.FAILED: "wrong",
    TestOutcome.RAISED: "raises",
    TestOutcome.CRASHED: "crashes",
}

_VALUE_WORDS = {
    ValueTransform.SCALE_UP: "on inputs scaled by 1e3 (overflow or lost precision)",
    ValueTransform.SCALE_UP_4: "on inputs scaled by 1e4 (it assumes small magnitudes)",
    ValueTransform.SCALE_UP_5: "on inputs scaled by 1e5 (it assumes small magnitudes)",
    ValueTransform.WIDE_RANGE: "on magnitudes spread over the dtype's finite range (it is "
    "right only within some band of magnitudes)",
    ValueTransform.SCALE_DOWN: "on inputs scaled by 1e-3 (underflow or an absolute epsilon)",
    ValueTransform.SHIFT: "on inputs shifted by +100 (e.g. softmax without max-subtraction)",
    ValueTransform.SPECIAL: "when the input holds Inf or NaN",
}

_LAYOUT_WORDS = {
    LayoutTransform.NON_CONTIGUOUS: "on non-contiguous input (it assumes a contiguous layout)",
    LayoutTransform.STORAGE_OFFSET: "when the input starts at a storage offset (it assumes "
    "offset 0 or aligned data)",
}


@dataclass(frozen=True)
class _Rule:
    statement: str
    holds: Callable[[dict[str, int]], bool]
    """True where the rule predicts a failure."""


def infer_assumptions(
    tests: list[CorrectnessTest], default_knobs: dict[str, int], findings: list[Finding]
) -> list[Assumption]:
    """Statements explaining the matrix's failures, raises and crashes."""
    assumptions: list[Assumption] = []
    for outcome, kind in _KIND_OF.items():
        bad = [t for t in tests if t.outcome is outcome]
        if bad:
            assumptions += _explain(kind, bad, tests, default_knobs)
    masked = [f for f in findings if f.check == "masks-non-finite"]
    if masked:
        assumptions.append(
            Assumption(
                statement="NaN or Inf inputs give finite outputs: the candidate masks bad input",
                kind="masks-special-values",
                variants=sorted({f.variant for f in masked if f.variant}),
            )
        )
    return assumptions


def _explain(
    kind: _FailureKind,
    bad: list[CorrectnessTest],
    tests: list[CorrectnessTest],
    default_knobs: dict[str, int],
) -> list[Assumption]:
    found: list[Assumption] = []
    verb = {"wrong": "wrong", "raises": "raises", "crashes": "crashes"}[kind]
    remaining = list(bad)
    transforms = [*_VALUE_WORDS.items(), *_LAYOUT_WORDS.items()]
    for transform, words in transforms:
        hits = [t for t in remaining if transform in (t.variant.value, t.variant.layout)]
        if hits:
            found.append(
                Assumption(
                    statement=f"{verb} {words}", kind=kind, variants=[t.variant.name for t in hits]
                )
            )
            remaining = [t for t in remaining if t not in hits]
    shaped = [t for t in remaining if t.variant.kind is VariantKind.SHAPE]
    if shaped:
        found.append(_shape_assumption(verb, kind, shaped, tests, default_knobs))
        remaining = [t for t in remaining if t not in shaped]
    if remaining:
        found.append(
            Assumption(
                statement=f"{verb} at the benchmark's own shape on some seeds",
                kind=kind,
                variants=[t.variant.name for t in remaining],
            )
        )
    return found


def _shape_assumption(
    verb: str,
    kind: _FailureKind,
    bad: list[CorrectnessTest],
    tests: list[CorrectnessTest],
    default_knobs: dict[str, int],
) -> Assumption:
    def knobs(test: CorrectnessTest) -> dict[str, int]:
        return {**default_knobs, **test.variant.knobs}

    # A pass at a stress shape (compared with the reference's own output, at a tolerance
    # extrapolated from smaller shapes) is weak evidence: a normaliser that drops one term of
    # 262145 is off by 4e-6, inside what a float32 sum of that length may honestly lose. It
    # contradicts no rule; a failure there still counts.
    good = [
        knobs(t)
        for t in tests
        if t.outcome is TestOutcome.PASSED
        and t.variant.kind in (VariantKind.SHAPE, VariantKind.SEED)
        and t.compared_with == "oracle"
    ]
    failing = [knobs(t) for t in bad]
    rules = [r for r in _rules(default_knobs, failing, good) if not any(r.holds(k) for k in good)]
    for rule in rules:
        if all(rule.holds(k) for k in failing):
            return Assumption(
                statement=f"{verb} {rule.statement}",
                kind=kind,
                variants=[t.variant.name for t in bad],
            )
    # Two conditions together ("batch_size exceeds 64 or in_features exceeds 1024"), each
    # contradicted by no passing cell.
    for index, first in enumerate(rules):
        for second in rules[index + 1 :]:
            if all(first.holds(k) or second.holds(k) for k in failing):
                return Assumption(
                    statement=f"{verb} {first.statement} or {second.statement}",
                    kind=kind,
                    variants=[t.variant.name for t in bad],
                )
    listed = ", ".join(t.variant.name.removeprefix("shape:") for t in bad[:6])
    return Assumption(
        statement=f"{verb} at some shapes ({listed})",
        kind=kind,
        variants=[t.variant.name for t in bad],
    )


def _rules(
    default: dict[str, int], failing: list[dict[str, int]], good: list[dict[str, int]]
) -> list[_Rule]:
    """Candidate rules, simplest first."""
    rules: list[_Rule] = []
    for name, value in default.items():
        rules += _knob_rules(name, value, [k[name] for k in good])
    rules.append(
        _Rule("unless the shape is the benchmark's own (hard-coded)", lambda k: k != default)
    )
    return rules


def _knob_rules(name: str, value: int, passing_values: list[int]) -> list[_Rule]:
    """The rules about one knob (``value`` at the benchmark's shape), simplest first. A
    function of its own so that each predicate closes over this knob, not a loop variable."""

    def not_multiple_of(divisor: int) -> _Rule:
        return _Rule(
            f"when {name} is not a multiple of {divisor}", lambda k: k[name] % divisor != 0
        )

    rules = [_Rule(f"when {name} is odd", lambda k: k[name] % 2 == 1)]
    rules += [not_multiple_of(divisor) for divisor in DIVISORS[1:] if value % divisor == 0]
    rules.append(_Rule(f"when {name} is 1", lambda k: k[name] == 1))
    if passing_values:
        top, bottom = max(passing_values), min(passing_values)
        rules.append(_Rule(f"when {name} exceeds {top}", lambda k: k[name] > top))
        rules.append(_Rule(f"when {name} is below {bottom}", lambda k: k[name] < bottom))
    rules.append(
        _Rule(
            f"unless {name} = {value} (hard-coded to the benchmark's shape)",
            lambda k: k[name] != value,
        )
    )
    return rules
