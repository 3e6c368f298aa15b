"""Honest rewrites that sum in another order are `verified` through the CLI, as a user runs it
(issue 25, class 5): default settings, timing on, every verified timed call compared.

Slow: one full verification per file. Run from a scratch folder, not the examples' own (that
folder's sandbox question is another class of the issue)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ORDERS = Path(__file__).resolve().parents[2] / "examples" / "honest" / "orders"
HONEST = sorted(p.name for p in ORDERS.glob("*.py") if p.name != "reference.py")


def test_every_order_is_listed_as_verified() -> None:
    assert {"mv.py", "sequential.py", "blocked.py", "kahan.py", "float64_inside.py"} <= set(HONEST)
    for name in HONEST:
        assert (ORDERS / name).read_text().splitlines()[1] == "# kernelproof-expect: verified"


@pytest.mark.parametrize("name", HONEST)
def test_an_honest_order_is_verified_through_the_cli(name: str, tmp_path: Path) -> None:
    report_path = tmp_path / "report.json"
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("kernelproof")),
            "verify",
            "--no-warm",
            "--json",
            str(report_path),
            str(ORDERS / "reference.py"),
            str(ORDERS / name),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    report = json.loads(report_path.read_text())
    findings = [
        f"[{f['severity']}] {f['check']}: {f['message'][:300]}"
        for f in report["findings"]
        if f["severity"] != "info"
    ]
    numeric = [
        f
        for f in report["findings"]
        if f["check"] in ("correctness", "timed-output") and f["severity"] == "fail"
    ]
    assert not numeric, "\n".join(f["message"][:600] for f in numeric)
    # Then the whole verdict: under heavy machine load the timing checks (issue 25 class 6)
    # are what can still turn this red, and the findings say so.
    assert report["verdict"] == "verified", "\n".join([result.stdout[-1500:], *findings])
    timing = report.get("timing") or {}
    assert timing.get("verified_timed_calls", 0) > 0
