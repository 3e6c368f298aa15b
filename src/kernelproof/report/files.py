"""Writing a report to disk as JSON and as a self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

from kernelproof.schema import Report


def write_json(report: Report, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.to_json() + "\n", encoding="utf-8")
    return path


def read_json(path: str | Path) -> Report:
    return Report.model_validate_json(Path(path).read_text(encoding="utf-8"))


def write_html(report: Report, path: str | Path) -> Path:
    from kernelproof.report.html import render_html

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(report), encoding="utf-8")
    return path
