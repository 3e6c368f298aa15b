"""The closed list of finding ids, and documentation on every schema field."""

import ast
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

import kernelproof.schema
from kernelproof.checks.static_scan import StaticCheck
from kernelproof.schema import Finding, FindingCheck, Severity

SCHEMA_DIR = Path(kernelproof.schema.__file__).parent

#: Ids another engineer's sandbox and out-of-process evidence work emits: reserved here.
RESERVED = {
    "sandbox",
    "cpu-time",
    "reference-round-stolen",
    "op-audit-contradiction",
    "native-stacks",
    "timing-rerun",
    "artifact-pin",
    "thread-count",
}


def test_an_unknown_check_id_is_rejected():
    with pytest.raises(ValidationError, match="check"):
        Finding(check="made-up-check", severity=Severity.INFO, message="m")


def test_a_known_id_given_as_a_string_validates_into_the_enum():
    finding = Finding(check="input-mutation", severity=Severity.SUSPECT, message="m")
    assert finding.check is FindingCheck.INPUT_MUTATION


def test_the_id_prints_and_serialises_as_itself():
    finding = Finding(check=FindingCheck.BELOW_FLOOR, severity=Severity.SUSPECT, message="m")
    assert f"{finding.check}" == str(finding.check) == "below-floor"
    assert json.loads(finding.model_dump_json())["check"] == "below-floor"


def test_reserved_ids_exist():
    assert {check.value for check in FindingCheck} >= RESERVED


def test_every_static_check_is_a_finding_check():
    for check in StaticCheck:
        assert FindingCheck(check.value).name == f"STATIC_{check.name}"


def _undocumented(tree: ast.Module) -> list[str]:
    """``Class.member`` for every class-level assignment not followed by a string literal."""
    missing = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        body = node.body
        for index, statement in enumerate(body):
            if isinstance(statement, ast.AnnAssign):
                name = statement.target.id  # type: ignore[union-attr]
            elif isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                name = statement.targets[0].id
            else:
                continue
            if name in {"model_config", "__test__"}:
                continue
            following = body[index + 1] if index + 1 < len(body) else None
            documented = (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            )
            if not documented:
                missing.append(f"{node.name}.{name}")
    return missing


@pytest.mark.parametrize(
    "module",
    [
        "checks.py",
        "finding.py",
        "report.py",
        "correctness.py",
        "timing.py",
        "roofline.py",
        "suite.py",
        "comparison.py",
        "fingerprint.py",
        "environment_rule.py",
        "recheck.py",
        "drift.py",
    ],
)
def test_every_field_and_member_has_a_docstring(module):
    tree = ast.parse((SCHEMA_DIR / module).read_text())
    assert _undocumented(tree) == []
