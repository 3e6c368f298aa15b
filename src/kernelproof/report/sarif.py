"""SARIF 2.1.0 for code-scanning dashboards (GitHub code scanning, VS Code's SARIF viewer).

SARIF is about places in source, so only findings with a ``location`` become results (the
static scan's findings have one). The verdict and summary travel in the run's properties.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kernelproof.report.ci_text import SARIF_LEVEL, located, relative_path
from kernelproof.schema import Finding, Report

#: The SARIF version this module writes, and the schema that describes it (an identifier for
#: validators; nothing fetches it).
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def sarif_log(report: Report) -> dict[str, Any]:
    """The report's located findings as a SARIF 2.1.0 log (a JSON-ready dict)."""
    findings = located(report)
    rules: dict[str, dict[str, Any]] = {}
    for finding in findings:
        rules.setdefault(
            finding.check,
            {
                "id": finding.check,
                "name": finding.check,
                "shortDescription": {"text": f"kernelproof check {finding.check}"},
                "defaultConfiguration": {"level": SARIF_LEVEL[finding.severity]},
            },
        )
    index = {check: i for i, check in enumerate(rules)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "kernelproof",
                "version": report.environment.versions.get("kernelproof", "0"),
                "rules": list(rules.values()),
            }
        },
        "results": [_result(f, index[f.check]) for f in findings],
        "invocations": [{"executionSuccessful": True, "exitCode": int(report.verdict.exit_code)}],
        "properties": {
            "verdict": report.verdict.value,
            "summary": report.summary,
            "candidate": report.candidate.path if report.candidate else None,
            "reference": report.reference.path if report.reference else None,
        },
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def sarif_json(report: Report) -> str:
    return json.dumps(_finite(sarif_log(report)), indent=2, allow_nan=False) + "\n"


def write_sarif(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(sarif_json(report), encoding="utf-8")
    return path


def _result(finding: Finding, rule_index: int) -> dict[str, Any]:
    assert finding.location is not None
    region: dict[str, int] = {"startLine": max(finding.location.line, 1)}
    if finding.location.column > 0:
        region["startColumn"] = finding.location.column
    result: dict[str, Any] = {
        "ruleId": finding.check,
        "ruleIndex": rule_index,
        "level": SARIF_LEVEL[finding.severity],
        "message": {"text": finding.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": relative_path(finding.location.path)},
                    "region": region,
                }
            }
        ],
        "properties": {"severity": finding.severity.value},
    }
    if finding.evidence:
        result["properties"]["evidence"] = finding.evidence
    return result


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinities as strings: SARIF is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
