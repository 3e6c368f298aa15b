"""The server in a real browser: headless Chromium, driven over the DevTools protocol, submits
a real candidate through the API from the server's own page, waits for its real verification
(on a server whose store is a real PostgreSQL), opens the leaderboard and the review packet,
and fails on any console message, uncaught exception or failed load.

Chromium is Debian's (``scripts/install_chromium.sh``), run as tests/report/test_browser.py
runs it: headless, no sandbox (tests may run as root), nothing that phones home.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.slow

TASK = "level1/19_NewGELU"
HONEST = (ROOT / "tasks" / "solutions" / "level1" / "19_torch_fused_gelu.py").read_text()

CHROMIUM = Path("/usr/bin/chromium")
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
    "--remote-debugging-port=0",
]

#: Seconds Chromium may take to open its DevTools endpoint on a loaded machine.
BROWSER_START_S = 60

#: Seconds one DevTools command may take (a page load included).
COMMAND_S = 60

#: Seconds the real verification may take through the queue.
VERIFICATION_S = 300


class Browser:
    """One page of a headless Chromium, and every problem it reported."""

    def __init__(self, chromium: str, profile: Path) -> None:
        from websockets.sync.client import connect

        self.process = subprocess.Popen(
            [chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        endpoint = self._endpoint()
        pages = json.loads(
            urllib.request.urlopen(f"http://{endpoint}/json/list", timeout=10).read()
        )
        page = next(p for p in pages if p["type"] == "page")
        self._closing = contextlib.ExitStack()
        self.socket = self._closing.enter_context(
            connect(page["webSocketDebuggerUrl"], max_size=None)
        )
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")

    def _endpoint(self) -> str:
        deadline = time.monotonic() + BROWSER_START_S
        assert self.process.stderr is not None
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            match = re.search(r"DevTools listening on ws://([^/]+)/", line)
            if match:
                # Keep reading what Chromium writes afterwards, so a full pipe never blocks it.
                threading.Thread(target=self.process.stderr.read, daemon=True).start()
                return match.group(1)
            if not line and self.process.poll() is not None:
                break
        raise AssertionError("chromium did not open its DevTools endpoint")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        deadline = time.monotonic() + COMMAND_S
        while time.monotonic() < deadline:
            message = json.loads(self.socket.recv(timeout=COMMAND_S))
            if message.get("id") == number:
                assert "error" not in message, message
                return message["result"]
            self.events.append(message)
        raise AssertionError(f"{method} got no answer in {COMMAND_S} s")

    def open(self, url: str) -> None:
        """Navigate and wait for the load event."""
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + COMMAND_S
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            assert time.monotonic() < deadline, f"{url} did not load"
            self.events.append(json.loads(self.socket.recv(timeout=COMMAND_S)))

    def run(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page (awaiting a promise) and return its value."""
        result = self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and failed loads so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append(
                    f"exception: {details.get('text', '')} "
                    f"{details.get('exception', {}).get('description', '')}"
                )
            elif method == "Runtime.consoleAPICalled" and params["type"] in (
                "error",
                "warning",
                "assert",
            ):
                found.append(
                    f"console.{params['type']}: "
                    + " ".join(str(a.get("value", a.get("description"))) for a in params["args"])
                )
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                found.append(f"log: {params['entry']['text']} ({params['entry'].get('url', '')})")
        return found

    def close(self) -> None:
        self._closing.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def browser(tmp_path: Path):
    found = shutil.which("chromium") or (str(CHROMIUM) if CHROMIUM.exists() else None)
    if found is None:
        pytest.fail(
            "chromium is not installed, and the server's pages must be checked in a "
            "real browser: run scripts/install_chromium.sh, then rerun the tests",
            pytrace=False,
        )
    page = Browser(found, tmp_path / "profile")
    yield page
    page.close()


def test_the_problem_capture_catches_a_broken_page(browser):
    browser.open("data:text/html,<script>console.error('boom'); notDefined();</script>")
    problems = browser.problems()
    assert any("console.error: boom" in p for p in problems), problems
    assert any("notDefined" in p for p in problems), problems


def test_submit_wait_and_review_in_a_browser(browser, server_process, postgresql):
    server = server_process(postgresql.create_database())
    browser.open(server.base + "/")
    assert browser.run("document.title").startswith("tasks")
    submitted = browser.run(
        "fetch('/api/submissions', {method: 'POST', headers: {'Authorization': 'Bearer "
        + server.token
        + "', 'Content-Type': 'application/json'}, body: JSON.stringify("
        + json.dumps({"task": TASK, "source": HONEST})
        + ")})"
        ".then(r => r.json().then(body => ({status: r.status, body})))"
    )
    assert submitted["status"] == 202, submitted
    submission_id = submitted["body"]["id"]

    deadline = time.monotonic() + VERIFICATION_S
    while True:
        view = browser.run(f"fetch('/api/submissions/{submission_id}').then(r => r.json())")
        if view["status"] in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert view["status"] == "done" and view["result"]["verdict"] == "verified", view

    browser.open(f"{server.base}/tasks/{TASK}")
    row = browser.run(
        f"(() => {{ const row = document.querySelector("
        f"'#verified + table tr[data-submission=\"{submission_id}\"]');"
        " return row && row.querySelector('.verdict').textContent; })()"
    )
    assert row == "verified"

    browser.run(f"document.querySelector('a[href=\"/submissions/{submission_id}\"]').click()")
    deadline = time.monotonic() + COMMAND_S
    while browser.run("location.pathname") != f"/submissions/{submission_id}":
        assert time.monotonic() < deadline, "the leaderboard's link did not open the packet"
        time.sleep(0.2)
    time.sleep(1)  # the packet's own scripts run on load
    assert browser.run("document.querySelector('[data-verdict]').dataset.verdict") == "verified"
    assert browser.run("document.querySelector('.banner.verified') !== null")
    for path in ("/queue", "/history"):
        browser.open(server.base + path)
    assert browser.problems() == []
