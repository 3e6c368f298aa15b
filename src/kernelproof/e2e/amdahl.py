"""What an isolated speedup predicts for the host (Amdahl's law), against what was measured,
and what explains a gap."""

from __future__ import annotations

from kernelproof.schema.e2e import AmdahlRow, Speed

#: A measured host speedup whose interval reaches below this share of the prediction's gain
#: (the part above 1.0) "falls short": the kernel's isolated gain did not carry over.
SHORTFALL_SHARE = 0.5

#: A speedup at the host's own signature that keeps less than this share of the isolated
#: gain (the part above 1.0) is what the shortfall comes from: the host calls the kernel
#: where it is slow.
SIGNATURE_SHARE = 0.5

#: Replaced modules below this share of host time cannot matter to it, whatever their speed.
SMALL_SHARE = 0.1

#: The profiler's and the forward hooks' shares disagree "a lot" when they differ by more
#: than this fraction of the larger one (and by 5 points of host time): the hooks' clock
#: counts Python overhead and hook cost the profiler's op ranges do not, a few percent apart.
SHARE_DISAGREEMENT = 0.35


def predicted_speedup(rows: list[AmdahlRow], *, at_host_signature: bool = False) -> float | None:
    """``1 / ((1 - sum p) + sum p / s)`` over the targets; None when a speedup is unknown.
    With ``at_host_signature``, each target's speedup at the host's signature where timed."""
    if not rows:
        return None
    speeds: list[float] = []
    for r in rows:
        speed = (
            r.host_signature_speedup
            if at_host_signature and r.host_signature_speedup is not None
            else r.isolated_speedup
        )
        if speed is None or speed <= 0:
            return None
        speeds.append(speed)
    rest = 1.0 - sum(r.share for r in rows)
    return 1.0 / (max(rest, 0.0) + sum(r.share / s for r, s in zip(rows, speeds)))


def shares_disagree(row: AmdahlRow) -> bool:
    """Whether the profiler's and the hooks' shares of one target differ a lot."""
    if row.share_profiler is None or row.share_hooks is None:
        return False
    high = max(row.share_profiler, row.share_hooks)
    gap = abs(row.share_profiler - row.share_hooks)
    return gap > 0.05 and gap > SHARE_DISAGREEMENT * high


def judge(speed: Speed) -> Speed:
    """Fill ``speed``'s predictions, ``shortfall``, ``cause``, ``shares_disagree`` and
    ``explanation`` from its rows and measurement; returns it."""
    speed.predicted_speedup = predicted_speedup(speed.rows)
    if any(r.host_signature_speedup is not None for r in speed.rows):
        speed.predicted_at_host_signatures = predicted_speedup(speed.rows, at_host_signature=True)
    speed.shares_disagree = any(shares_disagree(r) for r in speed.rows)
    speed.shortfall, speed.cause = False, None
    if speed.predicted_speedup is not None and speed.measured_speedup is not None:
        low, high = speed.measured_speedup_ci or (speed.measured_speedup,) * 2
        gain = speed.predicted_speedup - 1.0
        speed.shortfall = gain > 0 and high < 1.0 + SHORTFALL_SHARE * gain
        if speed.shortfall:
            speed.cause = "host-signature" if _slow_at_host(speed.rows) else "host-work"
        elif sum(r.share for r in speed.rows) < SMALL_SHARE:
            speed.cause = "amdahl"
        else:
            speed.cause = "none"
    speed.explanation = explain(speed)
    return speed


def _slow_at_host(rows: list[AmdahlRow]) -> list[AmdahlRow]:
    """The targets whose speedup at the host's signature keeps too little of the isolated
    gain."""
    return [
        r
        for r in rows
        if r.host_signature_speedup is not None
        and r.isolated_speedup is not None
        and r.isolated_speedup > 1.0
        and r.host_signature_speedup - 1.0 < SIGNATURE_SHARE * (r.isolated_speedup - 1.0)
    ]


def explain(speed: Speed) -> str:
    """The sentence the report shows: isolated speedups, prediction, measurement, the gap and
    its evidence."""
    isolated = ", ".join(
        f"{r.isolated_speedup:.2f}x" for r in speed.rows if r.isolated_speedup is not None
    )
    share = sum(r.share for r in speed.rows)
    source = (
        "profiler"
        if all(r.share_source == "profiler" for r in speed.rows)
        else (
            f"forward hooks; the profiler failed: {speed.profiler_error}"
            if speed.profiler_error
            else "forward hooks"
        )
    )
    text = _shares(speed) if speed.shares_disagree else ""
    if speed.predicted_speedup is None:
        return (
            f"the replaced modules take {share:.0%} of host time ({source}); no isolated "
            "speedup was measured, so nothing is predicted" + text
        )
    text = (
        f"{isolated} in isolation, on {share:.0%} of host time ({source}), predicts "
        f"{speed.predicted_speedup:.2f}x end to end" + text
    )
    if speed.measured_speedup is None:
        return text + "; the host's speedup was not measured"
    low, high = speed.measured_speedup_ci or (speed.measured_speedup, speed.measured_speedup)
    text += f"; measured {speed.measured_speedup:.2f}x (CI {low:.2f}-{high:.2f})"
    if speed.cause == "host-signature":
        slow = "; ".join(
            f"at the host's own signature for {r.target}, {r.host_signature} "
            f"({r.host_signature_calls} traced calls), the candidate is "
            f"{r.host_signature_speedup:.2f}x the module"
            + (
                f" (CI {r.host_signature_speedup_ci[0]:.2f}-{r.host_signature_speedup_ci[1]:.2f})"
                if r.host_signature_speedup_ci
                else ""
            )
            + f", not {r.isolated_speedup:.2f}x"
            for r in _slow_at_host(speed.rows)
        )
        text += (
            f". The isolated gain does not carry over: {slow}; that predicts "
            f"{speed.predicted_at_host_signatures:.2f}x end to end (the isolated timing "
            "posed other inputs than the host passes)"
        )
    elif speed.cause == "host-work":
        kept = [r for r in speed.rows if r.host_signature_speedup is not None]
        text += ". The isolated gain does not carry over" + (
            ", although the candidate keeps "
            + ", ".join(
                f"{r.host_signature_speedup:.2f}x at the host's signature for {r.target}"
                for r in kept
            )
            + ": the host's own work around it (copies, launches, other modules' "
            "changed inputs) hides it"
            if kept
            else ": the host calls the kernel at other shapes or layouts than the isolated "
            "timing, or the host's own work around it (copies, launches) hides it"
        )
    elif speed.cause == "amdahl":
        text += ". Amdahl: the replaced modules are too small a share of the host to matter"
    return text


def _shares(speed: Speed) -> str:
    parts = [
        f"{r.target} {r.share_profiler:.0%} by the profiler, {r.share_hooks:.0%} by the "
        f"forward hooks"
        for r in speed.rows
        if shares_disagree(r)
    ]
    return (
        " (the two measures of the share disagree: "
        + "; ".join(parts)
        + ": Python work inside the module that runs no op counts only in the hooks')"
    )
