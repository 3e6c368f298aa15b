"""The HTML review packet: one self-contained file, nothing fetched from the network.

This module derives what the templates show (the summary paragraph, the matrix grid, the
plots, the reproduce command) and hands it to ``templates/packet.html.j2``. The templates only
lay it out; every section there checks its own data and says why when it is absent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from kernelproof.report import formatting as fmt
from kernelproof.report import plots
from kernelproof.report.commands import VerifyCommand, verify_command
from kernelproof.report.matrix_view import MatrixView, matrix_view
from kernelproof.report.summary_text import headline, not_timed_reason, summary_paragraph
from kernelproof.schema import Finding, Report, Severity, TestOutcome
from kernelproof.schema.checks import EvidenceBasis

#: The packet's Content-Security-Policy: inline styles and scripts only, images only from
#: ``data:`` URLs, no connection anywhere. A browser then refuses any network fetch outright.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'unsafe-inline'; "
    "script-src 'unsafe-inline'; img-src data:; font-src data:"
)

#: Severities whose findings open with their evidence shown; lower ones start folded.
OPEN_SEVERITIES = (Severity.FAIL, Severity.SUSPECT)


@dataclass(frozen=True)
class Plots:
    """The packet's plots; each is ``None`` when its data is absent."""

    speedup: plots.Plot | None
    samples: plots.Plot | None
    roofline: plots.Plot | None
    available: bool
    """Whether matplotlib could be imported at all."""


#: How each finding's evidence basis reads in the packet (see ``EvidenceBasis``).
BASIS_TEXT = {
    EvidenceBasis.OUTSIDE.value: "rests on facts outside the candidate",
    EvidenceBasis.CANDIDATE.value: "reported from the candidate's process",
    EvidenceBasis.STATIC.value: "read from the source",
}


@dataclass(frozen=True)
class E2EPlots:
    """The e2e section's plots (``kernelproof e2e`` reports only)."""

    soak: plots.Plot | None


def render_html(report: Report) -> str:
    """The whole packet for ``report`` as one HTML document."""
    template = template_environment().get_template("packet.html.j2")
    return template.render(**packet_context(report))


def packet_context(report: Report) -> dict[str, Any]:
    """Everything the packet template needs, derived from ``report`` once."""
    command = verify_command(report)
    return {
        "report": report,
        "csp": CONTENT_SECURITY_POLICY,
        "summary": summary_paragraph(report),
        "headline": headline(report),
        "findings": _by_severity(report.findings),
        "open_severities": [s.value for s in OPEN_SEVERITIES],
        "basis_text": BASIS_TEXT,
        "matrix": _matrix(report),
        "outcomes": [o.value for o in TestOutcome],
        "plots": Plots(
            speedup=plots.speedup_per_shape(report.timing),
            samples=plots.sample_distributions(report.timing),
            roofline=plots.roofline_chart(report.roofline, report.timing),
            available=plots.available(),
        ),
        "not_timed": (f"Not timed: {not_timed_reason(report)}." if report.timing is None else ""),
        "intensity": _intensity(report),
        "e2e_plots": E2EPlots(soak=plots.soak_curves(report.e2e.soak if report.e2e else None)),
        "command": command,
        "command_note": _command_note(command),
        "fmt": fmt,
        "pretty": pretty_json,
        "version": report.environment.versions.get("kernelproof", ""),
    }


def pretty_json(value: Any) -> str:
    """Evidence and settings as indented JSON text; the template escapes it like any text."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def template_environment() -> Environment:
    """Autoescaping always on: every string in a report may come from an untrusted candidate
    (messages quote its exceptions and its source)."""
    return Environment(
        loader=PackageLoader("kernelproof.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def _by_severity(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings grouped by severity, most severe first, empty groups left out."""
    groups = [
        (s.value, [f for f in findings if f.severity is s])
        for s in sorted(Severity, key=lambda s: -s.rank)
    ]
    return [(severity, items) for severity, items in groups if items]


def _matrix(report: Report) -> MatrixView | None:
    if report.correctness is None or not report.correctness.tests:
        return None
    return matrix_view(report.correctness)


def _intensity(report: Report) -> float | None:
    roofline = report.roofline
    if roofline is None or roofline.bytes <= 0:
        return None
    return roofline.flops / roofline.bytes


def _command_note(command: VerifyCommand) -> str:
    if not command.unexpressed:
        return ""
    settings = ", ".join(f"{k}={v!r}" for k, v in command.unexpressed.items())
    return (
        f"These settings have no command-line flag and come from the task's POLICY or the "
        f"Python API; set them the same way to reproduce exactly: {settings}."
    )
