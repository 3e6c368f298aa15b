"""The JSON report matches its published schema: docs/report.schema.json is the model's own
(generated, kept in sync here), reports of every verdict path validate against it, and no
float field holds a string ("Infinity", "NaN") or a bound that was not measured."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from kernelproof.schema import Report, ShapeTiming, Timing
from kernelproof.schema.json_schema import report_json_schema, report_json_schema_text

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "report.schema.json"

#: A bootstrap over too few rounds gives this interval in Python: "not measured".
UNMEASURED = (0.0, math.inf)


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _unmeasured(report: Report) -> Report:
    """``report`` with a timing section as a short run leaves it: the default shape and one
    other timed over too few rounds for an interval, and an infinite error ratio."""
    assert report.timing is not None and report.correctness is not None
    shapes = [
        shape.model_copy(update={"speedup_ci": UNMEASURED}) if i != 1 else shape
        for i, shape in enumerate(report.timing.per_shape)
    ]
    timing = Timing.model_validate(
        {
            **report.timing.model_dump(),
            "speedup_ci": UNMEASURED,
            "per_shape": [s.model_dump() for s in shapes],
        }
    )
    tests = list(report.correctness.tests)
    tests[0] = tests[0].model_copy(update={"error_ratio": math.inf})
    correctness = report.correctness.model_copy(update={"tests": tests})
    return report.model_copy(update={"timing": timing, "correctness": correctness})


def test_the_published_schema_is_the_models_own():
    assert PUBLISHED.read_text() == report_json_schema_text(), (
        "docs/report.schema.json is stale: regenerate it with "
        "`kernelproof schema > docs/report.schema.json`"
    )
    Draft202012Validator.check_schema(report_json_schema())


def test_kernelproof_schema_prints_it():
    printed = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "schema"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(printed) == report_json_schema()


def test_the_schema_includes_the_environment_fingerprint():
    environment = report_json_schema()["$defs"]["Environment"]["properties"]
    for field in ("fingerprint", "fingerprint_schema"):
        assert field in environment


@pytest.mark.parametrize(
    "name", ["full_report", "verified_report", "untimed_report", "broken", "error"]
)
def test_every_verdict_path_validates(request, name):
    report = request.getfixturevalue(name)
    data = json.loads(report.to_json())
    errors = sorted(Draft202012Validator(report_json_schema()).iter_errors(data), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors[:5]]


def test_a_shape_without_an_interval_is_null_not_infinity(full_report):
    report = _unmeasured(full_report)
    text = report.to_json()
    data = json.loads(text)
    assert not [s for s in _strings(data) if s in {"Infinity", "-Infinity", "NaN"}]
    assert data["timing"]["speedup_ci"] is None
    assert [s["speedup_ci"] for s in data["timing"]["per_shape"]] == [None, [0.7, 0.9], None]
    assert data["correctness"]["tests"][0]["error_ratio"] is None
    assert not list(Draft202012Validator(report_json_schema()).iter_errors(data))
    back = Report.model_validate_json(text)
    assert back.timing is not None and back.timing.speedup_ci == UNMEASURED


def test_reports_written_with_infinity_strings_still_read():
    old = {
        "variant": "default",
        "knobs": {},
        "speedup": 1.0,
        "speedup_ci": [0.0, "Infinity"],
        "reference": {"median_s": 1.0, "iqr_s": 0.0, "samples": [1.0]},
        "candidate": {"median_s": 1.0, "iqr_s": 0.0, "samples": [1.0]},
    }
    assert ShapeTiming.model_validate_json(json.dumps(old)).speedup_ci == UNMEASURED


def test_the_range_uses_only_shapes_with_an_interval(full_report):
    timing = _unmeasured(full_report).timing
    assert timing is not None
    assert timing.shapes_without_interval == ["default", "shape:dim=1"]
    assert timing.speedup_range == {"min": 0.8, "median": 0.8, "max": 0.8}
