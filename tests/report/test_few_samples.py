"""Honest output for few samples: an interval the bootstrap could not compute reads "not enough
samples" in the terminal and the packet, and reports stay readable when stdout is a pipe."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from kernelproof.report import formatting as fmt
from kernelproof.report.html import render_html
from kernelproof.report.terminal import NON_TTY_WIDTH, render_report, report_console

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def unresolved(full_report):
    """The full report with the bootstrap's answer to too few rounds: (0, inf)."""
    timing = full_report.timing.model_copy(update={"speedup_ci": (0.0, math.inf)})
    return full_report.model_copy(update={"timing": timing})


def test_an_unbounded_interval_reads_in_words():
    assert fmt.interval((0.0, math.inf)) == "n/a (not enough samples)"
    assert fmt.interval((0.9, math.inf)) == "n/a (not enough samples)"
    assert fmt.interval((0.8, 1.2)) == "0.8x-1.2x"


def test_terminal_and_packet_say_not_enough_samples(unresolved):
    console = Console(record=True, width=200, color_system=None)
    render_report(unresolved, console)
    text = console.export_text()
    assert "95% CI n/a (not enough samples)" in text and "0x-n/a" not in text
    html = render_html(unresolved)
    assert "not enough samples" in html and "0x-n/a" not in html


def test_a_console_that_is_not_a_terminal_is_wide(tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    with open(tmp_path / "log.txt", "w") as log:
        assert report_console(log).width >= NON_TTY_WIDTH
    monkeypatch.setenv("COLUMNS", "90")
    with open(tmp_path / "log.txt", "w") as log:
        assert report_console(log).width == 90  # the user's choice wins


@pytest.mark.slow
def test_piped_cli_output_keeps_findings_whole(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    reference = ROOT / "examples" / "formats" / "degenerate" / "reference.py"
    candidate = ROOT / "examples" / "formats" / "degenerate" / "ones.py"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelproof.cli",
            "verify",
            str(reference),
            str(candidate),
            "--no-timing",
            "--seeds",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    lines = run.stdout.splitlines()
    assert max(len(line) for line in lines) > 80, run.stdout
    boxed = [line for line in lines if line[:1] in "╭│╰┏┃┡└"]  # commands are never wrapped
    assert boxed and all(len(line) <= NON_TTY_WIDTH for line in boxed), run.stdout
    findings = " ".join(line.strip(" │") for line in lines)
    assert "…" not in run.stdout
    assert "a reduction over a dimension of size 1?" in " ".join(findings.split())
