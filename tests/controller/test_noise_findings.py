"""Per-shape timing-noise notes become one finding with a table."""

from __future__ import annotations

from kernelproof.controller.summary import combine_noise_findings
from kernelproof.schema import Finding, FindingCheck, Severity


def _note(shape: str, side: str) -> Finding:
    return Finding(
        check=FindingCheck.TIMING_NOISE,
        severity=Severity.INFO,
        message=f"{side} timing at {shape}: 20% outliers",
        variant=f"timing:{shape}",
    )


def test_twenty_notes_become_one_finding_with_every_note_in_its_table():
    other = Finding(check=FindingCheck.CPU_TIME, severity=Severity.SUSPECT, message="cores")
    notes = [_note(f"shape:{i}", side) for i in range(10) for side in ("reference", "candidate")]
    combined = combine_noise_findings([other, *notes])
    noise = [f for f in combined if f.check == FindingCheck.TIMING_NOISE]
    assert len(noise) == 1 and other in combined
    assert len(noise[0].evidence["notes"]) == 20
    assert "10 shape(s)" in noise[0].message


def test_a_single_note_is_left_as_it_is():
    note = _note("default", "candidate")
    assert combine_noise_findings([note]) == [note]
