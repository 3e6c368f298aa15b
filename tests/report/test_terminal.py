"""The terminal summary says what the packet says, in brief."""

from __future__ import annotations

from rich.console import Console

from kernelproof.report.terminal import render_report


def rendered(report) -> str:
    console = Console(record=True, width=200, color_system=None)
    render_report(report, console)
    return console.export_text()


def test_full_report_in_brief(full_report):
    text = rendered(full_report)
    assert "INCORRECT" in text
    assert "assumes:" in text and "wrong when dim is odd (shape:dim=4097, shape:dim=1)" in text
    assert "repro (smallest failing case):" in text
    assert (
        "kernelproof verify examples/softmax/reference.py examples/softmax/wrong_odd.py --seed 1234"
    ) in text
    assert "speedup over 3 shapes with an interval: min 0.8x, median 1x, max 2x" in text
    assert "baselines: vs eager 2x, vs torch.compile 1.5x" in text
    assert "default (batch_size=64, dim=4096)" in text  # the per-shape table
    assert "speed of light: floor 190 µs" in text
    assert "reproduce: kernelproof verify" in text and "--seeds 2 --budget 5" in text


def test_candidate_text_is_never_markup(full_report, hostile):
    assert hostile.split("</script> ")[1] in rendered(full_report)


def test_untimed_report_says_why(untimed_report):
    text = rendered(untimed_report)
    assert "timing: not timed: timing was turned off" in text
    assert "--no-timing" in text


def test_broken_and_error_reports_render(broken, error):
    assert "BROKEN" in rendered(broken)
    text = rendered(error)
    assert "ERROR" in text and "kernelproof verify REFERENCE" in text


def test_commands_are_not_wrapped(full_report):
    console = Console(record=True, width=60, color_system=None)
    render_report(full_report, console)
    lines = console.export_text().splitlines()
    assert any(
        line.startswith("reproduce: kernelproof verify") and "--budget 5" in line for line in lines
    )
