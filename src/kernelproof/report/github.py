"""GitHub Actions annotations: one workflow command per located finding, so a pull request
shows the finding on the line it points at."""

from __future__ import annotations

import os
from collections.abc import Mapping

from kernelproof.report.ci_text import GITHUB_COMMAND, located, relative_path
from kernelproof.schema import Report

#: The variable GitHub Actions sets to ``true`` in every job.
GITHUB_ACTIONS_ENV = "GITHUB_ACTIONS"


def running_on_github(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this process runs inside a GitHub Actions job."""
    return (environ if environ is not None else os.environ).get(GITHUB_ACTIONS_ENV) == "true"


def workflow_commands(report: Report) -> list[str]:
    """``::warning file=...,line=...::message`` lines for the report's located findings
    (``::error`` for fail and suspect, ``::notice`` for info)."""
    lines = []
    for finding in located(report):
        assert finding.location is not None
        properties = {
            "file": relative_path(finding.location.path),
            "line": str(max(finding.location.line, 1)),
            "title": f"kernelproof {finding.check}",
        }
        if finding.location.column > 0:
            properties["col"] = str(finding.location.column)
        joined = ",".join(f"{k}={_escape_property(v)}" for k, v in properties.items())
        lines.append(
            f"::{GITHUB_COMMAND[finding.severity]} {joined}::{_escape_data(finding.message)}"
        )
    return lines


def _escape_data(text: str) -> str:
    """Escaping of a command's message, as GitHub's own toolkit does it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
