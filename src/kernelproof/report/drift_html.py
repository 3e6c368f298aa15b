"""The drift view as one self-contained HTML page in the review packet's style: the table per
dimension, the plot over time, the values, and the shapes that would extend the proof."""

from __future__ import annotations

from pathlib import Path

from kernelproof.proof.shape_extension import ShapeProposal, Unexpressible
from kernelproof.report import formatting as fmt
from kernelproof.report import plots
from kernelproof.report.html import CONTENT_SECURITY_POLICY, template_environment
from kernelproof.schema.drift import DriftSummary


def render_drift_html(
    summary: DriftSummary, proposals: list[ShapeProposal], refused: list[Unexpressible]
) -> str:
    template = template_environment().get_template("drift.html.j2")
    return template.render(
        summary=summary,
        csp=CONTENT_SECURITY_POLICY,
        fmt=fmt,
        plot=plots.drift_over_time(summary),
        proposals=proposals,
        refused=refused,
    )


def write_drift_html(
    summary: DriftSummary,
    proposals: list[ShapeProposal],
    refused: list[Unexpressible],
    path: str | Path,
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_drift_html(summary, proposals, refused), encoding="utf-8")
    return path
