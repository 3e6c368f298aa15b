"""The HTML review packet: one self-contained file, nothing fetched from the network."""

from __future__ import annotations

from jinja2 import Environment, PackageLoader, select_autoescape

from kernelproof.schema import Report, Severity, TestOutcome


def render_html(report: Report) -> str:
    env = Environment(
        loader=PackageLoader("kernelproof.report", "templates"),
        autoescape=select_autoescape(["html"]),
    )
    template = env.get_template("packet.html.j2")
    by_severity = {s: [f for f in report.findings if f.severity is s] for s in Severity}
    return template.render(report=report, by_severity=by_severity, Outcome=TestOutcome)
