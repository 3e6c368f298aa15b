"""The change report of ``kernelproof recheck`` as one self-contained HTML page, in the review
packet's style (its stylesheet and content policy; nothing fetched)."""

from __future__ import annotations

from pathlib import Path

from kernelproof.report import formatting as fmt
from kernelproof.report.html import CONTENT_SECURITY_POLICY, template_environment
from kernelproof.schema.recheck import RecheckReport, RecheckStatus


def render_recheck_html(report: RecheckReport) -> str:
    """The page: a banner (holds / lost), the verdicts that changed, then every verdict with
    the environment difference that decided it."""
    template = template_environment().get_template("recheck.html.j2")
    changed = [i for i in report.items if i.status is not RecheckStatus.STILL_VALID]
    return template.render(
        report=report,
        csp=CONTENT_SECURITY_POLICY,
        fmt=fmt,
        changed=changed,
        valid=[i for i in report.items if i not in changed],
    )


def write_recheck_html(report: RecheckReport, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_recheck_html(report), encoding="utf-8")
    return path
