"""What an isolated speedup predicts for the host (Amdahl's law), against what was measured."""

from __future__ import annotations

from kernelproof.schema.e2e import AmdahlRow, Speed

#: A measured host speedup whose interval reaches below this share of the prediction's gain
#: (the part above 1.0) "falls short": the kernel's isolated gain did not carry over.
SHORTFALL_SHARE = 0.5


def predicted_speedup(rows: list[AmdahlRow]) -> float | None:
    """``1 / ((1 - sum p) + sum p / s)`` over the targets; None when a speedup is unknown."""
    if not rows or any(r.isolated_speedup is None or r.isolated_speedup <= 0 for r in rows):
        return None
    rest = 1.0 - sum(r.share for r in rows)
    return 1.0 / (max(rest, 0.0) + sum(r.share / r.isolated_speedup for r in rows))  # type: ignore[operator]


def explain(speed: Speed) -> str:
    """The sentence the report shows: isolated speedups, prediction, measurement, the gap."""
    isolated = ", ".join(f"{r.isolated_speedup:.2f}x" for r in speed.rows
                         if r.isolated_speedup is not None)
    share = sum(r.share for r in speed.rows)
    if speed.predicted_speedup is None:
        return (f"the replaced modules take {share:.0%} of host time; no isolated speedup was "
                "measured, so nothing is predicted")
    text = (f"{isolated} in isolation, on {share:.0%} of host time, predicts "
            f"{speed.predicted_speedup:.2f}x end to end")
    if speed.measured_speedup is None:
        return text + "; the host's speedup was not measured"
    low, high = speed.measured_speedup_ci or (speed.measured_speedup, speed.measured_speedup)
    text += f"; measured {speed.measured_speedup:.2f}x (CI {low:.2f}-{high:.2f})"
    gain = speed.predicted_speedup - 1.0
    if gain > 0 and high < 1.0 + SHORTFALL_SHARE * gain:
        text += (". The isolated gain does not carry over: the host calls the kernel at other "
                 "shapes or layouts than the isolated timing, or the host's own work around it "
                 "(copies, launches) hides it")
    elif share < 0.1:
        text += ". Amdahl: the replaced modules are too small a share of the host to matter"
    return text
