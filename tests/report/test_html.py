"""The HTML packet: every section renders from a full report, and degrades when data is absent."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

from kernelproof.report.files import write_html
from kernelproof.report.html import CONTENT_SECURITY_POLICY, render_html
from kernelproof.schema import Verdict

SECTIONS = [
    "verdict",
    "summary",
    "findings",
    "assumptions",
    "repros",
    "correctness",
    "timing",
    "roofline",
    "code",
    "environment",
    "reproduce",
]


class _Links(HTMLParser):
    """Every URL-bearing attribute and every tag, for the self-containment checks."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.ids: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in {"src", "href", "xlink:href", "action", "poster", "data"} and value:
                self.urls.append(value)
            if name == "id" and value:
                self.ids.append(value)


def parse(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def section(html: str, name: str) -> str:
    """The markup of ``<section id=name>`` up to the next section."""
    match = re.search(rf'<section id="{name}">(.*?)</section>', html, re.DOTALL)
    assert match, f"no section {name!r} in the packet"
    return match.group(1)


def test_every_section_renders_from_a_full_report(full_html):
    html = full_html
    ids = parse(html).ids
    for name in SECTIONS:
        assert name in ids, name
    assert 'class="banner incorrect"' in html
    assert "INCORRECT" in html


def test_summary_paragraph_says_what_was_tested_held_failed_and_the_speed(full_html):
    text = section(full_html, "verdict")
    assert "7 input variants" in text
    assert "2 variants gave a silently wrong answer (shape:dim=4097, shape:dim=1)" in text
    assert "It assumes: wrong when dim is odd." in text
    assert "speedup 2x (95% CI 1.8x-2.2x" in text
    assert "torch.compile of the reference: 1.5x" in text


def test_findings_are_grouped_by_severity_with_evidence_and_location(full_html):
    text = section(full_html, "findings")
    order = [text.index(f'class="sev {s}"') for s in ("fail", "warn", "info")]
    assert order == sorted(order)
    assert "examples/softmax/wrong_odd.py:16:9" in text
    assert "&#34;variants&#34;" in text or "&quot;variants&quot;" in text  # evidence as JSON
    assert "forces incorrect" in text


def test_untrusted_text_is_escaped(full_html, hostile):
    html = full_html
    assert hostile not in html
    assert "&lt;script&gt;alert(" in html
    assert "<script>alert(" not in html


def test_matrix_is_a_colour_coded_grid_of_variants_by_seeds(full_html):
    text = section(full_html, "correctness")
    assert 'id="matrix-grid"' in text
    header = re.search(r"<thead>(.*?)</thead>", text, re.DOTALL).group(1)
    assert "11" in header and "22" in header
    assert len(re.findall(r'<td class="cell failed"', text)) == 2
    assert re.search(r'<td class="cell failed"[^>]*>126</td>', text)
    assert re.search(r'<td class="cell failed"[^>]*>failed</td>', text), "ratio 0 shows the outcome"
    assert 'class="cell raised"' in text and 'class="cell skipped"' in text
    assert 'class="cell passed near"' in text, "a ratio over half the limit is flagged"
    assert text.count('data-kind="seed"') == 1, "the seed variants share one row"


def test_assumptions_and_repros_are_shown_with_copyable_blocks(full_html):
    html = full_html
    assumptions = section(html, "assumptions")
    assert "wrong when dim is odd" in assumptions and "shape:dim=127" in assumptions
    repros = section(html, "repros")
    assert repros.count('class="copyable"') == 2
    assert "kernelproof verify examples/softmax/reference.py" in repros
    assert "x = torch.randn(1, 3)" in repros
    assert "batch_size=1, dim=3" in repros


def test_timing_has_plots_per_shape_table_distributions_and_baselines(full_html):
    text = section(full_html, "timing")
    assert text.count("<svg") == 2, "speedup per shape and the sample distributions"
    assert 'data-plot="speedup"' in text and 'data-plot="samples"' in text
    assert text.count("<tr><td><code>") == 3, "one per-shape row per timed shape"
    assert "vs torch.compile" in text and "1.5x" in text
    assert "vs eager PyTorch" in text
    assert "0.8x &ndash; 2x" in text


def test_roofline_plot_and_ceilings_source(full_html):
    text = section(full_html, "roofline")
    assert 'data-plot="roofline"' in text
    assert "calibration:abc123" in text
    assert "20% of the speed of light" in text


def test_code_facts_and_environment(full_html):
    html = full_html
    code = section(html, "code")
    assert "reference 21, candidate 42" in code
    assert "<code>softmax_kernel</code> &times;14" in code
    assert "12.5 s" in code
    environment = section(html, "environment")
    assert "abc123" in environment and "2.13.0" in environment


def test_reproduce_command_has_the_seed_and_non_default_settings(full_html):
    text = section(full_html, "reproduce")
    assert (
        "kernelproof verify examples/softmax/reference.py examples/softmax/wrong_odd.py "
        "--seed 1234 --seeds 2 --budget 5"
    ) in text


def test_no_timing_degrades_to_a_reason(untimed_report):
    html = render_html(untimed_report)
    assert "<svg" not in html
    assert "Not timed: timing was turned off" in section(html, "timing")
    assert "this run was not timed" in section(html, "roofline")
    assert "--no-timing" in section(html, "reproduce")


def test_timing_without_roofline_says_why(build_report):
    html = render_html(build_report(roofline=None))
    assert "ceilings could not be had" in section(html, "roofline")
    assert section(html, "timing").count("<svg") == 2


def test_roofline_without_flops_has_no_plot(build_report):
    from kernelproof.schema import Ceilings, Roofline, SolFraction

    copy = Roofline(
        flops=0,
        bytes=1e6,
        floor_s=1e-4,
        sol_fraction=SolFraction(),
        ceilings=Ceilings(peak_flops=1e10, peak_bytes_per_s=1e10, source="table"),
    )
    text = section(render_html(build_report(roofline=copy)), "roofline")
    assert "<svg" not in text and "No floating-point operations" in text


def test_broken_candidate_without_a_matrix(broken):
    html = render_html(broken)
    assert 'class="banner broken"' in html
    assert "No correctness matrix" in section(html, "correctness")
    assert "No correctness matrix ran" in section(html, "assumptions")
    assert "verdict is broken" in section(html, "timing")
    assert "exit_code" in section(html, "findings")


def test_error_report_with_nothing_but_a_finding(error):
    html = render_html(error)
    assert 'class="banner error"' in html
    assert "(unreadable)" in html
    assert "No code facts" in section(html, "code")
    reproduce = section(html, "reproduce")
    assert "kernelproof verify REFERENCE examples/softmax/wrong_odd.py" in reproduce


def test_packet_is_self_contained(full_html):
    html = full_html
    links = parse(html)
    external = [u for u in links.urls if not (u.startswith("#") or u.startswith("data:"))]
    assert external == []
    assert "link" not in links.tags
    assert not re.search(r"<script[^>]+src=", html)
    assert 'http-equiv="Content-Security-Policy"' in html
    assert f'content="{CONTENT_SECURITY_POLICY}"' in unescape(html)
    assert "@import" not in html and "url(http" not in html


def test_plot_ids_are_unique_across_the_packet(full_html):
    ids = parse(full_html).ids
    duplicated = {i for i in ids if ids.count(i) > 1}
    assert duplicated == set()


def test_rendering_is_deterministic(full_report, full_html):
    assert render_html(full_report) == full_html


def test_write_html_creates_the_folder(tmp_path, broken):
    path = write_html(broken, tmp_path / "deep" / "packet.html")
    assert path.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_verified_report_without_findings_says_so(build_report):
    html = render_html(build_report(Verdict.VERIFIED, findings=[]))
    assert "Nothing failed" in section(html, "repros")
    assert "No findings" in section(html, "findings")


def test_each_finding_says_what_its_evidence_rests_on(full_html):
    text = section(full_html, "findings")
    # correctness compares bytes the controller holds; a static finding reads the source.
    fail = text[text.index('data-check="correctness"') :]
    assert "rests on facts outside the candidate" in fail[: fail.index('class="message"')]
    static = text[text.index('data-check="static-introspection"') :]
    assert "read from the source" in static[: static.index('class="message"')]


def test_the_sandbox_the_candidate_ran_in_is_shown():
    from tests.report.conftest import make_report

    from kernelproof.schema.report import Sandbox

    box = Sandbox(
        enforced=["user namespace", "landlock abi 7", "seccomp"],
        missing={"pid namespace": "EPERM <b>"},
        outside={"Seccomp": 2, "NoNewPrivs": 1},
    )
    text = section(render_html(make_report(sandbox=box)), "environment")
    assert "Candidate sandbox" in text
    assert "user namespace, landlock abi 7, seccomp" in text
    assert "missing: pid namespace" in text and "EPERM &lt;b&gt;" in text
    assert "/proc: Seccomp" in text
