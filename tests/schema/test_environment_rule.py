"""The invalidation rule: which differences void a verdict, which only annotate it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelproof.schema.environment_rule import (
    BINDING_COMPONENTS,
    RULES,
    Effect,
    Policy,
    diff_fingerprints,
)
from kernelproof.schema.fingerprint import EnvironmentFingerprint

DOCS = Path(__file__).resolve().parents[2] / "docs" / "shipping.md"

BASE = EnvironmentFingerprint(
    components={
        "torch": "2.13.0+cpu",
        "numpy": "2.4.6",
        "numba": "0.68.1",
        "python": "3.11.7",
        "compiler": "c++ 12.2.0",
        "isa": "avx avx2 fma",
        "threads": "2",
        "candidate": "a" * 64,
        "task": "b" * 64,
        "kernelproof": "0.1.0",
        "cpu_model": "Xeon A",
        "driver": "550.54.15",
    },
    languages=["pytorch"],
)


def _diff(languages: list[str] | None = None, **changed: str | None):
    proved = BASE if languages is None else BASE.model_copy(update={"languages": languages})
    return diff_fingerprints(proved, BASE.with_components(**changed))


def _effect(languages: list[str] | None = None, **changed: str | None) -> Effect:
    [change] = _diff(languages, **changed).changes
    return change.effect


@pytest.mark.parametrize(
    "component, value",
    [
        ("torch", "2.14.0+cpu"),
        ("torch", "2.13.0+cu124"),
        ("candidate", "c" * 64),
        ("task", "d" * 64),
        ("isa", "avx avx2 avx512f fma"),
        ("numpy", "2.3.5"),
        ("python", "3.12.1"),
        ("driver", "560.1"),
    ],
)
def test_an_invalidating_change_invalidates(component: str, value: str) -> None:
    assert _effect(**{component: value}) is Effect.INVALIDATES


@pytest.mark.parametrize(
    "component, value",
    [
        ("numpy", "2.4.5"),
        ("python", "3.11.9"),
        ("kernelproof", "0.2.0"),
        ("cpu_model", "Xeon B"),
        ("driver", "550.90.07"),
    ],
)
def test_a_change_that_does_not_compute_differently_only_annotates(
    component: str, value: str
) -> None:
    assert _effect(**{component: value}) is Effect.ANNOTATES


def test_a_toolchain_invalidates_only_candidates_written_in_its_language() -> None:
    assert _effect(numba="0.69.0") is Effect.ANNOTATES  # a pytorch candidate
    assert _effect(["numba"], numba="0.69.0") is Effect.INVALIDATES
    assert _effect(["cpp"], compiler="c++ 13.1.0") is Effect.INVALIDATES
    assert _effect(["torch.compile"], compiler="c++ 13.1.0") is Effect.INVALIDATES
    assert _effect(["triton"], compiler="c++ 13.1.0") is Effect.ANNOTATES
    # Unknown languages (an older report without a code section): every toolchain counts.
    unknown = BASE.model_copy(update={"languages": None})
    [change] = diff_fingerprints(unknown, unknown.with_components(numba="0.69.0")).changes
    assert change.effect is Effect.INVALIDATES


@pytest.mark.parametrize(
    "current, effect",
    [("2", Effect.INVALIDATES), ("1", Effect.ANNOTATES), ("4", Effect.INVALIDATES)],
)
def test_threads_hold_at_the_proved_count_and_at_one(current: str, effect: Effect) -> None:
    proved = BASE.with_components(threads="2" if current != "2" else "4")
    [change] = diff_fingerprints(proved, BASE.with_components(threads=current)).changes
    assert change.effect is effect, change


def test_not_recorded_invalidates_and_not_checkable_is_unchecked() -> None:
    older = BASE.with_components(isa=None).model_copy(update={"recorded": False})
    diff = diff_fingerprints(older, BASE)
    [change] = diff.changes
    assert (change.component, change.effect) == ("isa", Effect.INVALIDATES)
    assert "not recorded" in change.reason and change.proved is None
    assert diff.describe().startswith("the report predates environment fingerprints")
    guard_side = BASE.with_components(task=None)
    [unchecked] = diff_fingerprints(BASE, guard_side).changes
    assert (
        unchecked.effect is Effect.UNCHECKED and not diff_fingerprints(BASE, guard_side).invalidated
    )


def test_everything_turns_annotations_into_invalidations() -> None:
    current = BASE.with_components(kernelproof="0.2.0")
    assert not diff_fingerprints(BASE, current).invalidated
    assert diff_fingerprints(BASE, current, everything=True).invalidated


def test_the_same_environment_has_no_difference_and_descriptions_name_both_values() -> None:
    assert diff_fingerprints(BASE, BASE).changes == []
    assert diff_fingerprints(BASE, BASE).describe() == "same environment"
    text = _diff(torch="2.14.0+cpu").describe()
    assert "torch 2.13.0+cpu -> 2.14.0+cpu (invalidates:" in text
    isa = _diff(isa="avx avx512f fma").describe()
    assert "isa +avx512f -avx2" in isa
    assert re.search(r"candidate a{12} -> c{12}", _diff(candidate="c" * 64).describe())


def test_every_rule_has_a_reason_and_the_binding_part_excludes_annotations() -> None:
    for name, rule in RULES.items():
        assert rule.why, name
    assert "torch" in BINDING_COMPONENTS and "kernelproof" not in BINDING_COMPONENTS
    assert all(RULES[n].policy is not Policy.ANNOTATE for n in BINDING_COMPONENTS)


def test_the_shipping_docs_list_every_component_with_its_policy() -> None:
    """docs/shipping.md shows the rule as a table: one row per component, its policy named."""
    text = DOCS.read_text()
    for name, rule in RULES.items():
        row = re.search(rf"^\| `{name}` \|[^\n]*\|", text, re.MULTILINE)
        assert row, f"docs/shipping.md has no row for `{name}`"
        assert f"`{rule.policy.value}`" in row.group(0), (name, row.group(0))
