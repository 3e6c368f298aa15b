"""The drift view: a guard's log read back and laid against the envelope it serves.

Per signature dimension (a tensor argument's size along one axis, its dtype) every production
call is *inside* what the matrix verified (a size it ran, or one in the covered range of the
knob that moves it), *near the edge* of that range (within :data:`EDGE_FACTOR` of either end:
where production is heading out), or *outside* it; per window and over the whole log. The value statistics of the sampled calls are
laid against the value variants the matrix passed. Damaged lines (a crash mid-write, an edit)
are named with their number and skipped; the rest of the log is read. Pure.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from kernelproof.errors import UsageError
from kernelproof.schema.drift import (
    DRIFT_FILE,
    DimensionDrift,
    DimensionShare,
    DriftSummary,
    GuardRecord,
    OutsideSignature,
    ValueCoverage,
    ValueStats,
    WindowRecord,
)
from kernelproof.schema.envelope import CallSignature, Envelope, TensorSignature

__all__ = ["EDGE_FACTOR", "read_drift_log", "summarise"]

#: A size within this factor of the smallest or largest verified size is near the edge: a
#: production distribution moving out of the proof shows there first.
EDGE_FACTOR = 1.25


def read_drift_log(path: str | Path) -> tuple[list[GuardRecord], list[WindowRecord], list[str]]:
    """The log's guard and window records, and one problem per unreadable line. ``path`` is
    the log or the incident folder holding ``drift.jsonl``. Raises :class:`UsageError` when it
    holds no log at all."""
    path = Path(path)
    if path.is_dir():
        path = path / DRIFT_FILE
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise UsageError(
            f"cannot read the drift log {path}: {exc.strerror or exc}; pass the "
            f"guard's incident_dir (it writes {DRIFT_FILE} there) or its "
            "drift_log"
        ) from None
    guards: list[GuardRecord] = []
    windows: list[WindowRecord] = []
    problems: list[str] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            kind = data.get("kind") if isinstance(data, dict) else None
            if kind == "guard":
                guards.append(GuardRecord.model_validate(data))
            elif kind == "window":
                windows.append(WindowRecord.model_validate(data))
            else:
                raise ValueError(f"no record kind 'guard' or 'window' (got {kind!r})")
        except (ValueError, ValidationError) as exc:
            problems.append(f"line {number}: {_brief(exc)}; skipped")
    if not guards:
        raise UsageError(
            f"{path} holds no guard record (its first line is written when the "
            f"guard starts){'; ' + problems[0] if problems else ''}: is it a "
            "kernelproof drift log?"
        )
    return guards, windows, problems


def summarise(path: str | Path) -> DriftSummary:
    """The drift view of the log at ``path``: the windows of the guards serving the candidate
    of the log's latest guard record (earlier runs of the same candidate included)."""
    guards, windows, problems = read_drift_log(path)
    latest = guards[-1]
    same = {g.guard for g in guards if g.candidate_sha256 == latest.candidate_sha256}
    windows = sorted((w for w in windows if w.guard in same), key=lambda w: w.end_utc)
    envelope = latest.envelope
    axes = _axes(envelope)
    summary = DriftSummary(
        log=str(path),
        candidate_path=latest.candidate_path,
        reference_path=latest.reference_path,
        envelope=envelope,
        value_coverage=latest.values,
        problems=problems,
        windows=[w.end_utc for w in windows],
    )
    totals = {axis.name: DimensionShare() for axis in axes}
    per_window: dict[str, list[DimensionShare]] = {axis.name: [] for axis in axes}
    outside: Counter[CallSignature] = Counter()
    for window in windows:
        shares = {axis.name: DimensionShare() for axis in axes}
        for entry in window.signatures:
            summary.calls += entry.calls
            if entry.inside:
                summary.inside_envelope += entry.calls
            elif entry.signature is not None:
                outside[entry.signature] += entry.calls
            for axis in axes:
                axis.count(entry.signature, entry.calls, shares[axis.name])
        for axis in axes:
            per_window[axis.name].append(shares[axis.name])
            _add(totals[axis.name], shares[axis.name])
        summary.values.merge(window.values)
    summary.dimensions = [
        DimensionDrift(
            name=axis.name,
            verified=axis.verified_text,
            total=totals[axis.name],
            windows=per_window[axis.name],
        )
        for axis in axes
    ]
    summary.outside = [OutsideSignature(signature=s, calls=n) for s, n in outside.most_common()]
    summary.uncovered_values = _uncovered(summary.values, latest.values)
    return summary


class _Axis:
    """One signature dimension: a size along one axis of one argument, or its dtype.

    A size is inside when the matrix verified it exactly, or when it lies in the covered range
    of the knob that moves it (the envelope's own rule); near the edge when it is inside that
    range within :data:`EDGE_FACTOR` of either end; outside otherwise. A dtype is inside when
    some verified call had it."""

    def __init__(
        self,
        name: str,
        arg: int,
        dim: int | None,
        exact: list[int | str],
        span: tuple[int, int] | None = None,
    ) -> None:
        self.name, self.arg, self.dim = name, arg, dim
        self.exact = exact
        self.span = span

    @property
    def verified_text(self) -> str:
        if self.dim is None:
            return ", ".join(map(str, self.exact))
        sizes = ", ".join(str(v) for v in sorted(int(v) for v in self.exact))
        if self.span is None:
            return f"exactly {sizes}"
        return f"{self.span[0]}..{self.span[1]} (a covered range); verified at {sizes}"

    def count(self, signature: CallSignature | None, calls: int, share: DimensionShare) -> None:
        """Add a signature's calls to ``share`` where this axis applies to it."""
        tensor = _tensor(signature, self.arg)
        if tensor is None or (self.dim is not None and self.dim >= len(tensor.shape)):
            return
        share.calls += calls
        value: int | str = tensor.dtype if self.dim is None else tensor.shape[self.dim]
        if self.span is not None and isinstance(value, int):
            low, high = self.span
            if low <= value <= high:
                near = high > low and (value * EDGE_FACTOR > high or value < low * EDGE_FACTOR)
                if near:
                    share.near_edge += calls
                else:
                    share.inside += calls
                return
        if value in self.exact:
            share.inside += calls
        else:
            share.outside += calls


def _axes(envelope: Envelope) -> list[_Axis]:
    """The envelope's signature dimensions, named by the knob that moves them when one does."""
    if not envelope.signatures:
        return []
    template = envelope.templates[0] if envelope.templates else envelope.signatures[0]
    bound = {(b.arg, b.dim): (r, b) for r in envelope.ranges for b in r.bindings}
    axes = []
    for arg, entry in enumerate(template.args):
        if not isinstance(entry, TensorSignature):
            continue
        for dim in range(len(entry.shape)):
            sizes = sorted(
                {
                    t.shape[dim]
                    for s in envelope.signatures
                    if (t := _tensor(s, arg)) is not None and len(t.shape) == len(entry.shape)
                }
            )
            knob_range, binding = bound.get((arg, dim), (None, None))
            span = None
            if knob_range is not None and binding is not None and knob_range.covered:
                ends = sorted(
                    binding.scale * v + binding.offset for v in (knob_range.low, knob_range.high)
                )
                span = (ends[0], ends[1])
            name = (
                f"{knob_range.knob} (arg {arg}, dim {dim})"
                if knob_range is not None
                else f"arg {arg}, dim {dim}"
            )
            axes.append(_Axis(name, arg, dim, list(sizes), span))
        dtypes = sorted(
            {t.dtype for s in envelope.signatures if (t := _tensor(s, arg)) is not None}
        )
        axes.append(_Axis(f"arg {arg}, dtype", arg, None, list(dtypes)))
    return axes


def _tensor(signature: CallSignature | None, arg: int) -> TensorSignature | None:
    if signature is None or arg >= len(signature.args):
        return None
    entry = signature.args[arg]
    return entry if isinstance(entry, TensorSignature) else None


def _add(total: DimensionShare, part: DimensionShare) -> None:
    total.calls += part.calls
    total.inside += part.inside
    total.near_edge += part.near_edge
    total.outside += part.outside


#: What each value statistic is, in words, for the list of uncovered values.
_VALUE_WORDS = {
    "non_finite": "Inf or NaN inputs",
    "subnormal": "subnormal inputs",
    "huge": "inputs beyond the square root of the dtype's largest value",
}


def _uncovered(values: ValueStats, coverage: ValueCoverage) -> list[str]:
    """What production sent that the matrix did not prove the candidate on."""
    found = []
    for field, words in _VALUE_WORDS.items():
        calls = getattr(values, field)
        covered = getattr(coverage, field)
        if calls and not covered:
            why = "never tried" if covered is None else "tried, and the candidate failed them"
            found.append(
                f"{calls} of {values.sampled} sampled call(s) had {words}: the matrix {why}"
            )
    return found


def _brief(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "the record"
        return f"not a drift record ({where}: {problem['msg']})"
    return f"not a drift record ({str(exc)[:120]})"
