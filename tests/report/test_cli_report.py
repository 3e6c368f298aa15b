"""``kernelproof report``: re-render a JSON report; runs in a subprocess like every CLI test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

from kernelproof.report.files import write_json


def kernelproof(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environment.update({"COLUMNS": "200", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def test_report_writes_html_junit_and_sarif(full_report, tmp_path):
    source = write_json(full_report, tmp_path / "report.json")
    out = tmp_path / "out"
    result = kernelproof(
        "report",
        str(source),
        "--html",
        str(out / "p.html"),
        "--junit",
        str(out / "j.xml"),
        "--sarif",
        str(out / "r.sarif"),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "INCORRECT" in result.stdout and "reproduce: kernelproof verify" in result.stdout
    assert (out / "p.html").read_text().startswith("<!doctype html>")
    assert ET.parse(out / "j.xml").getroot().tag == "testsuites"
    assert json.loads((out / "r.sarif").read_text())["version"] == "2.1.0"
    assert "::warning" not in result.stdout


def test_github_annotations_when_running_in_actions(full_report, tmp_path):
    source = write_json(full_report, tmp_path / "report.json")
    result = kernelproof("report", str(source), env={"GITHUB_ACTIONS": "true"})
    assert result.returncode == 0
    assert (
        "::warning file=examples/softmax/wrong_odd.py,line=16,title=kernelproof "
        "static-introspection,col=9::"
    ) in result.stdout


def test_a_file_that_is_not_a_report_is_an_error(tmp_path):
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    result = kernelproof("report", str(bogus))
    assert result.returncode == 4
    assert "is not a kernelproof report" in result.stdout
    missing = kernelproof("report", str(tmp_path / "missing.json"))
    assert missing.returncode == 4 and "cannot read the report" in missing.stdout


def test_verify_help_lists_the_ci_options():
    result = kernelproof("verify", "--help")
    assert "--junit" in result.stdout and "--sarif" in result.stdout
