"""The packet in a real browser: headless Chromium opens packets of real verifications and must
see the verdict banner, the plots, the script's work, and no console error at all.

Console errors are caught twice: Chromium's own console log on stderr, and a collector script
injected ahead of the packet's own that writes every error into the DOM, read back with
``--dump-dom``. A control page with a deliberate error proves both catch what they should.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelproof.report.files import write_html

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

#: Where Debian's package puts the browser; scripts/install_chromium.sh installs it.
CHROMIUM = Path("/usr/bin/chromium")

#: Headless, no sandbox (tests may run as root), and nothing that phones home.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]

#: Seconds one browser run may take on a loaded 2-core machine.
BROWSER_TIMEOUT_S = 180

#: Records every error and console complaint into the DOM as it happens, so --dump-dom shows it.
COLLECTOR = """<script>
(function () {
  var errors = [];
  function keep(text) {
    errors.push(String(text));
    document.documentElement.setAttribute("data-kp-errors", JSON.stringify(errors));
  }
  document.documentElement.setAttribute("data-kp-errors", "[]");
  window.addEventListener("error", function (e) { keep("error: " + (e.message || e.type)); }, true);
  window.addEventListener("unhandledrejection", function (e) { keep("rejection: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    keep("csp: " + e.violatedDirective + " " + e.blockedURI);
  });
  ["error", "warn"].forEach(function (level) {
    var original = console[level];
    console[level] = function () {
      keep("console." + level + ": " + Array.prototype.join.call(arguments, " "));
      return original.apply(console, arguments);
    };
  });
})();
</script>"""


@dataclass
class Page:
    dom: str
    console: list[str]
    """Chromium's console log lines (``INFO:CONSOLE``), each one a problem for the packet."""

    collected: list[str]
    """What the injected collector saw."""


@pytest.fixture(scope="module")
def chromium() -> str:
    found = shutil.which("chromium") or (str(CHROMIUM) if CHROMIUM.exists() else None)
    if found is None:
        pytest.fail(
            "chromium is not installed, and the HTML packet must be checked in a real "
            "browser: run scripts/install_chromium.sh (it installs Debian's chromium "
            "package), then rerun the tests",
            pytrace=False,
        )
    return found


def open_page(chromium: str, html: Path, work: Path, screenshot: Path | None = None) -> Page:
    """Load ``html`` (with the collector injected) and return its DOM and its errors."""
    page = work / f"{html.stem}.probe.html"
    text = html.read_text(encoding="utf-8")
    page.write_text(re.sub(r"<head>", "<head>\n" + COLLECTOR, text, count=1), encoding="utf-8")
    profile = work / f"{html.stem}.profile"
    mode = (
        [f"--screenshot={screenshot}", "--window-size=1280,1600"] if screenshot else ["--dump-dom"]
    )
    result = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", *mode, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_S,
    )
    assert result.returncode == 0, f"chromium failed ({result.returncode}): {result.stderr[-2000:]}"
    console = [
        line for line in result.stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line
    ]
    collected: list[str] = []
    if not screenshot:
        match = re.search(r'data-kp-errors="([^"]*)"', result.stdout)
        assert match, "the collector did not run: the page's scripts never executed"
        from html import unescape

        collected = json.loads(unescape(match.group(1)))
    return Page(dom=result.stdout, console=console, collected=collected)


@pytest.fixture(scope="module")
def packets(verified, tmp_path_factory) -> dict[str, tuple[Path, object]]:
    """Packets of three real verifications: verified with timing, incorrect, broken."""
    folder = tmp_path_factory.mktemp("packets")
    softmax = EXAMPLES / "softmax"
    reports = {
        "correct": verified(
            softmax / "correct.py", timing=True, budget_s=3, compile_baseline=False, seeds=2
        ),
        "wrong": verified(softmax / "wrong_odd.py"),
        "broken": verified(EXAMPLES / "broken" / "exits.py"),
    }
    return {
        name: (write_html(report, folder / f"{name}.html"), report)
        for name, report in reports.items()
    }


def assert_clean(page: Page) -> None:
    assert page.console == [], "console messages:\n" + "\n".join(page.console)
    assert page.collected == [], "errors seen by the page:\n" + "\n".join(page.collected)


def test_the_error_capture_catches_a_broken_page(chromium, tmp_path):
    broken = tmp_path / "control.html"
    broken.write_text(
        "<!doctype html><html><head></head><body>"
        "<script>console.error('boom'); notDefined();</script></body></html>"
    )
    page = open_page(chromium, broken, tmp_path)
    assert any("Uncaught ReferenceError" in line for line in page.console), page.console
    assert any("notDefined" in e for e in page.collected), page.collected
    assert any("console.error: boom" in e for e in page.collected), page.collected


def test_verified_packet_with_timing(chromium, packets, tmp_path):
    path, report = packets["correct"]
    assert report.verdict.value == "verified" and report.timing is not None
    page = open_page(chromium, path, tmp_path)
    assert_clean(page)
    assert 'class="banner verified"' in page.dom and 'data-verdict="verified"' in page.dom
    plots = set(re.findall(r'data-plot="(\w+)"', page.dom))
    assert {"speedup", "samples"} <= plots
    if report.roofline is not None:
        assert "roofline" in plots
    assert re.search(r'<button type="button"[^>]*>copy</button>', page.dom), "script did not run"


def test_incorrect_packet(chromium, packets, tmp_path):
    path, report = packets["wrong"]
    assert report.verdict.value == "incorrect"
    page = open_page(chromium, path, tmp_path)
    assert_clean(page)
    assert 'class="banner incorrect"' in page.dom
    assert 'class="cell failed"' in page.dom
    assert "Not timed" in page.dom
    if report.repros:
        assert page.dom.count('aria-label="repro command"') == len(report.repros)
        assert re.search(
            r'aria-label="repro script"><pre><code>.*?</code></pre><button', page.dom, re.DOTALL
        ), "the repro script has no copy button"


def test_broken_packet(chromium, packets, tmp_path):
    path, report = packets["broken"]
    assert report.verdict.value == "broken"
    page = open_page(chromium, path, tmp_path)
    assert_clean(page)
    assert 'class="banner broken"' in page.dom
    assert "No correctness matrix" in page.dom or "no cell ran" in page.dom


def test_screenshot_of_a_packet(chromium, packets, tmp_path):
    path, _ = packets["correct"]
    shot = tmp_path / "packet.png"
    page = open_page(chromium, path, tmp_path, screenshot=shot)
    assert_clean(page)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
