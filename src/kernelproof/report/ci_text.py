"""Small helpers the CI outputs share: which findings carry a source location, how a severity
reads in each CI format, and text made safe for XML."""

from __future__ import annotations

import re
from pathlib import Path

from kernelproof.schema import Finding, Report, Severity

#: Severity -> SARIF result level (SARIF 2.1.0, section 3.27.10).
SARIF_LEVEL = {
    Severity.FAIL: "error",
    Severity.SUSPECT: "error",
    Severity.WARN: "warning",
    Severity.INFO: "note",
}

#: Severity -> GitHub Actions workflow command that annotates a line.
GITHUB_COMMAND = {
    Severity.FAIL: "error",
    Severity.SUSPECT: "error",
    Severity.WARN: "warning",
    Severity.INFO: "notice",
}

#: Characters XML 1.0 forbids even escaped; a candidate's exception text may contain them.
_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def located(report: Report) -> list[Finding]:
    """The findings that point at a line of source (static-scan evidence does)."""
    return [f for f in report.findings if f.location is not None]


def xml_safe(text: str) -> str:
    """``text`` with the characters XML cannot carry replaced by U+FFFD."""
    return _XML_FORBIDDEN.sub("\ufffd", text)


def relative_path(path: str) -> str:
    """``path`` relative to the working directory when it lies below it, with forward slashes:
    CI systems resolve locations against the repository root the job runs in."""
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(Path.cwd())
        except ValueError:
            return candidate.as_posix()
    return candidate.as_posix()
