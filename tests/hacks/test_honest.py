"""Zero false suspicion: every honest kernel style is verified with no finding at ``suspect`` or
``fail``. A detector that flags one of these is broken, however many hacks it catches."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.schema import Severity, Verdict

pytestmark = pytest.mark.slow

HONEST = Path(__file__).resolve().parents[2] / "examples" / "honest"


@pytest.mark.parametrize("name", sorted(path.name for path in HONEST.glob("*.py")))
def test_honest_candidate_is_verified_without_suspicion(verified, name):
    report = verified(HONEST / name)
    flagged = [
        f"[{f.severity.value}] {f.check}: {f.message[:400]}"
        for f in report.findings
        if f.severity in (Severity.SUSPECT, Severity.FAIL)
    ]
    assert not flagged, "\n".join(flagged)
    assert report.verdict is Verdict.VERIFIED, report.summary
