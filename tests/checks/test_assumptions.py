from kernelproof.checks.assumptions import infer_assumptions
from kernelproof.schema import (
    CorrectnessTest,
    Finding,
    InputVariant,
    LayoutTransform,
    Severity,
    TestOutcome,
    ValueTransform,
    VariantKind,
)

DEFAULT = {"batch": 16, "dim": 64}


def cell(outcome, kind=VariantKind.SHAPE, value=None, layout=None, **knobs):
    name = f"{kind.value}:{knobs}{value}{layout}"
    variant = InputVariant(name=name, kind=kind, knobs=knobs, seed=1, value=value, layout=layout)
    return CorrectnessTest(variant=variant, seed=1, outcome=outcome)


def statements(tests, findings=()):
    return [a.statement for a in infer_assumptions(tests, DEFAULT, list(findings))]


PASS, FAIL, RAISE = TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.RAISED


def test_parity_is_found_and_named():
    tests = [
        cell(PASS, VariantKind.SEED),
        cell(FAIL, dim=65),
        cell(FAIL, dim=61),
        cell(PASS, dim=32),
        cell(PASS, batch=17),
        cell(FAIL, dim=1),
    ]
    assert statements(tests) == ["wrong when dim is odd"]


def test_hard_coded_shape():
    tests = [
        cell(PASS, VariantKind.SEED),
        cell(PASS, batch=17),
        cell(FAIL, dim=32),
        cell(FAIL, dim=128),
        cell(FAIL, dim=65),
    ]
    assert statements(tests) == ["wrong unless dim = 64 (hard-coded to the benchmark's shape)"]


def test_two_bounds_together():
    tests = [
        cell(PASS, VariantKind.SEED),
        cell(PASS, batch=8),
        cell(PASS, dim=32),
        cell(FAIL, batch=32),
        cell(FAIL, dim=128),
    ]
    assert statements(tests) == ["wrong when batch exceeds 16 or when dim exceeds 64"]


def test_layout_value_and_raises_are_stated():
    tests = [
        cell(PASS, VariantKind.SEED),
        cell(RAISE, VariantKind.LAYOUT, layout=LayoutTransform.NON_CONTIGUOUS),
        cell(FAIL, VariantKind.VALUE, value=ValueTransform.SHIFT),
    ]
    found = statements(tests)
    assert "raises on non-contiguous input (it assumes a contiguous layout)" in found
    assert any(s.startswith("wrong on inputs shifted by +100") for s in found)


def test_masking_special_values_is_a_limitation():
    masked = Finding(
        check="masks-non-finite", severity=Severity.WARN, message="m", variant="value:inf-nan"
    )
    assert statements([cell(PASS, VariantKind.SEED)], [masked]) == [
        "NaN or Inf inputs give finite outputs: the candidate masks bad input"
    ]


def test_nothing_to_explain_gives_nothing():
    assert statements([cell(PASS, VariantKind.SEED), cell(PASS, dim=3)]) == []
