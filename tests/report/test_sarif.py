"""SARIF 2.1.0: located findings only, the schema's keys, strict JSON."""

from __future__ import annotations

import json

from kernelproof.report.sarif import SARIF_VERSION, sarif_json, write_sarif


def test_log_has_the_sarif_keys(full_report, tmp_path):
    log = json.loads(write_sarif(full_report, tmp_path / "r.sarif").read_text())
    assert log["version"] == SARIF_VERSION == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "kernelproof" and driver["version"]
    assert {r["id"] for r in driver["rules"]} == {"static-introspection", "static-languages"}
    assert run["properties"]["verdict"] == "incorrect"


def test_results_are_the_located_findings(full_report):
    (run,) = json.loads(sarif_json(full_report))["runs"]
    results = run["results"]
    assert len(results) == sum(1 for f in full_report.findings if f.location is not None) == 2
    warn = next(r for r in results if r["ruleId"] == "static-introspection")
    assert warn["level"] == "warning"
    assert warn["message"]["text"].startswith("References")
    location = warn["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "examples/softmax/wrong_odd.py"
    assert location["region"] == {"startLine": 16, "startColumn": 9}
    rules = run["tool"]["driver"]["rules"]
    assert rules[warn["ruleIndex"]]["id"] == "static-introspection"
    assert next(r for r in results if r["ruleId"] == "static-languages")["level"] == "note"


def test_strict_json_even_with_infinite_evidence(build_report):
    from kernelproof.schema import Finding, Severity, SourceLocation, Verdict

    finding = Finding(
        check="static-timer",
        severity=Severity.WARN,
        message="m",
        evidence={"v": float("nan")},
        location=SourceLocation(path="k.py", line=0),
    )
    text = sarif_json(build_report(Verdict.VERIFIED, findings=[finding]))
    result = json.loads(text)["runs"][0]["results"][0]
    assert result["properties"]["evidence"] == {"v": "nan"}
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}


def test_no_located_findings_gives_an_empty_run(broken):
    (run,) = json.loads(sarif_json(broken))["runs"]
    assert run["results"] == [] and run["tool"]["driver"]["rules"] == []
