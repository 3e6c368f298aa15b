"""Writing a report to disk (JSON, the HTML packet, JUnit XML, SARIF) and reading it back."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from kernelproof.errors import UsageError
from kernelproof.report.junit import write_junit
from kernelproof.report.sarif import write_sarif
from kernelproof.schema import Report

__all__ = ["read_json", "write_html", "write_json", "write_junit", "write_outputs", "write_sarif"]


def write_json(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.to_json() + "\n", encoding="utf-8")
    return path


def read_json(path: str | Path) -> Report:
    """The report stored at ``path``. Raises :class:`UsageError` naming the file and the
    problem when it is missing or not a kernelproof report."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot read the report {path}: {exc.strerror or exc}; "
            "pass the file `kernelproof verify --json` wrote"
        ) from None
    try:
        return Report.model_validate_json(text)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "the top level"
        raise UsageError(
            f"{path} is not a kernelproof report ({exc.error_count()} problem(s); first at "
            f"{where}: {problem['msg']}); pass the file `kernelproof verify --json` wrote"
        ) from None


def write_html(report: Report, path: str | Path) -> Path:
    """Write the self-contained HTML review packet."""
    from kernelproof.report.html import render_html

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path


def write_outputs(
    report: Report,
    *,
    json_path: str | Path | None = None,
    html_path: str | Path | None = None,
    junit_path: str | Path | None = None,
    sarif_path: str | Path | None = None,
) -> list[Path]:
    """Write every requested output of ``report``; returns the paths written, in that order."""
    writers = (
        (json_path, write_json),
        (html_path, write_html),
        (junit_path, write_junit),
        (sarif_path, write_sarif),
    )
    return [writer(report, path) for path, writer in writers if path is not None]
