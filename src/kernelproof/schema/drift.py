"""The guard's drift log: what production calls looked like, window by window, against the
envelope they were proved on; and the drift view read back from it.

The guard appends JSON lines to ``drift.jsonl`` in its incident folder (or ``drift_log``):
one :class:`GuardRecord` when it starts (the report it serves, its envelope and which value
variants the matrix passed), then one :class:`WindowRecord` per time window (every distinct
call signature with its count and whether it was inside the envelope, and value statistics of
the sampled calls). Everything the drift view and the shape extension need is in the log, so
they run anywhere, without the report. Pure pydantic.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.envelope import CallSignature, Envelope

DRIFT_SCHEMA: Final = "kernelproof.drift/1"

#: The log's file name inside an incident folder.
DRIFT_FILE = "drift.jsonl"


class ValueCoverage(BaseModel):
    """Which unusual values the matrix proved the candidate on (its value variants that
    passed); ``None`` when the matrix did not try them."""

    model_config = ConfigDict(frozen=True)

    non_finite: bool | None = None
    """Inf and NaN planted in the inputs (``value:inf-nan``)."""

    subnormal: bool | None = None
    """Values in the dtype's subnormal range (``value:denormal``)."""

    huge: bool | None = None
    """Values towards the dtype's largest finite one (``value:largest-finite``)."""


class ValueStats(BaseModel):
    """Value statistics of the sampled calls' floating-point inputs in one window."""

    sampled: int = 0
    """Calls whose inputs were looked at."""

    non_finite: int = 0
    """Of those, calls with an Inf or a NaN in some input."""

    subnormal: int = 0
    """Calls with a subnormal value in some input."""

    huge: int = 0
    """Calls with a value above the square root of the dtype's largest (a square or a
    product of two overflows)."""

    magnitude_decades: dict[str, int] = Field(default_factory=dict)
    """Calls by the decade of their largest finite magnitude (``"3"``: 1e3 <= |x| < 1e4;
    ``"zero"`` when every value is zero)."""

    def merge(self, other: ValueStats) -> None:
        """Add ``other``'s counts to these."""
        self.sampled += other.sampled
        self.non_finite += other.non_finite
        self.subnormal += other.subnormal
        self.huge += other.huge
        for decade, count in other.magnitude_decades.items():
            self.magnitude_decades[decade] = self.magnitude_decades.get(decade, 0) + count


class SignatureCount(BaseModel):
    """One distinct call signature seen in a window."""

    signature: CallSignature | None
    """``None`` for calls the signature cannot describe (keyword or opaque arguments)."""

    calls: int
    """Calls with this signature in the window."""

    inside: bool
    """Whether the envelope holds it (the guard's own routing decision)."""


class GuardRecord(BaseModel):
    """The first line a guard writes: what it serves and what was proved."""

    schema_: Literal["kernelproof.drift/1"] = Field(default=DRIFT_SCHEMA, alias="schema")
    """``kernelproof.drift/1`` (serialised as ``schema``)."""

    kind: Literal["guard"] = "guard"
    """Tells the two records apart."""

    guard: str
    """This guard's id (start time and process): its windows name it."""

    started_utc: str
    """When the guard was built, ISO 8601 in UTC."""

    candidate_path: str | None = None
    """The candidate file the report verified."""

    candidate_sha256: str | None = None
    """Its hash: windows of guards serving the same one are read together."""

    reference_path: str | None = None
    """The task file the report was verified against (what ``guard shapes --task`` extends)."""

    envelope: Envelope
    """The report's envelope: what production is laid against."""

    values: ValueCoverage = Field(default_factory=ValueCoverage)
    """Which unusual values the matrix passed."""

    model_config = ConfigDict(populate_by_name=True)


class WindowRecord(BaseModel):
    """One window of production calls."""

    schema_: Literal["kernelproof.drift/1"] = Field(default=DRIFT_SCHEMA, alias="schema")
    """``kernelproof.drift/1`` (serialised as ``schema``)."""

    kind: Literal["window"] = "window"
    """Tells the two records apart."""

    guard: str
    """The guard that wrote it (its :class:`GuardRecord`)."""

    start_utc: str
    """ISO 8601, UTC."""

    end_utc: str
    """ISO 8601, UTC."""

    calls: int
    """Every call routed in the window."""

    signatures: list[SignatureCount] = Field(default_factory=list)
    """Each distinct signature once, with its count."""

    values: ValueStats = Field(default_factory=ValueStats)
    """The sampled calls' value statistics."""

    model_config = ConfigDict(populate_by_name=True)


class DimensionShare(BaseModel):
    """One signature dimension's calls in one window (or over the whole log)."""

    calls: int = 0
    """Calls this dimension applies to (a tensor of that rank there)."""

    inside: int = 0
    """Within the verified sizes' span, away from its ends."""

    near_edge: int = 0
    """Within the span, but within the edge factor of its smallest or largest size."""

    outside: int = 0
    """Beyond the verified span, or at a dtype the matrix never ran."""

    def share(self, part: int) -> float:
        return part / self.calls if self.calls else 0.0


class DimensionDrift(BaseModel):
    """A signature dimension (a tensor argument's size along one axis, or its dtype) over the
    log: what was verified, and how production calls fell against it."""

    name: str
    """``batch_size (arg 0, dim 0)``, ``arg 1 dim 2`` or ``arg 0 dtype``."""

    verified: str
    """The verified sizes' span (``1..512, 8 sizes``) or dtypes."""

    total: DimensionShare
    """Over the whole log."""

    windows: list[DimensionShare] = Field(default_factory=list)
    """In the order of :attr:`DriftSummary.windows`."""


class OutsideSignature(BaseModel):
    """A production signature the envelope does not hold, with how often it came."""

    signature: CallSignature
    """The signature."""

    calls: int
    """Calls with it over the log."""


class DriftSummary(BaseModel):
    """The drift view of one log: per dimension, per window, and the values."""

    log: str
    """The log read."""

    candidate_path: str | None = None
    """The candidate the log's latest guard served."""

    reference_path: str | None = None
    """The task it was verified against (what ``guard shapes`` extends)."""

    windows: list[str] = Field(default_factory=list)
    """Each window's end time (UTC), oldest first."""

    calls: int = 0
    """Every call in the windows read."""

    inside_envelope: int = 0
    """Of those, the calls the envelope held (the guard's decision)."""

    dimensions: list[DimensionDrift] = Field(default_factory=list)
    """One per signature dimension of the envelope."""

    values: ValueStats = Field(default_factory=ValueStats)
    """The sampled calls' value statistics, summed."""

    value_coverage: ValueCoverage = Field(default_factory=ValueCoverage)
    """Which unusual values the matrix passed."""

    uncovered_values: list[str] = Field(default_factory=list)
    """Value statistics production showed and the matrix did not cover, in plain words."""

    outside: list[OutsideSignature] = Field(default_factory=list)
    """Signatures outside the envelope, most frequent first."""

    envelope: Envelope | None = None
    """The envelope laid against (the latest guard's)."""

    problems: list[str] = Field(default_factory=list)
    """Lines of the log that could not be read (damaged or cut short), each with its number."""

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)
