"""Timing in a report: raw per-call samples per side and shape, and the speedups drawn from them."""

from __future__ import annotations

import statistics

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kernelproof.schema.interval import SpeedupInterval, measured_interval


class TimingStats(BaseModel):
    """Per-call times of one implementation at one shape, with statistics derived from them."""

    median_s: float
    """Median per-call time in seconds."""

    iqr_s: float
    """Interquartile range of the per-call times in seconds."""

    samples: list[float]
    """Every per-call time in seconds, in the order measured."""

    outliers: int = 0
    """Samples beyond 1.5 IQR of the quartiles."""

    note: str = ""
    """A noise warning when the samples look unstable; empty on clean data."""


class ShapeTiming(BaseModel):
    """Reference and candidate timed at one shape variant."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    variant: str
    """Name of the shape variant (``default`` for the task's shape)."""

    knobs: dict[str, int]
    """Full knob values of this shape."""

    reference: TimingStats
    """The reference's statistics at this shape."""

    candidate: TimingStats
    """The candidate's statistics at this shape."""

    speedup: float
    """Median over rounds of the reference-to-candidate ratio of medians."""

    speedup_ci: SpeedupInterval
    """Bootstrap confidence interval of the speedup, over rounds."""

    floor_s: float | None = None
    """Speed-of-light floor at this shape, when known."""

    process_spread: float | None = None
    """The between-pair spread (ln scale) added to this shape's interval: the machine's
    measurement at this shape's call time (see ``Timing.process_spread``)."""

    @property
    def has_interval(self) -> bool:
        """Whether this shape's speedup has a measured interval (enough rounds for a
        bootstrap): only such a speedup enters ranges, leaderboards and suite metrics."""
        return measured_interval(self.speedup_ci) is not None


class Baselines(BaseModel):
    """Candidate speedups against the baselines, at the default shape."""

    eager: float | None = None
    """Speedup against the eager PyTorch reference."""

    torch_compile: float | None = None
    """Speedup against ``torch.compile`` of the reference."""

    torch_compile_error: str | None = None
    """Why the ``torch.compile`` baseline could not be timed."""


class Timing(BaseModel):
    """Timing at the default shape and per shape. Absent under ``--no-timing``."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    reference: TimingStats
    """The reference's statistics at the default shape."""

    candidate: TimingStats
    """The candidate's statistics at the default shape."""

    speedup: float
    """Speedup at the default shape (see :attr:`ShapeTiming.speedup`)."""

    speedup_ci: SpeedupInterval
    """Confidence interval of the default shape's speedup."""

    per_shape: list[ShapeTiming] = Field(default_factory=list)
    """The same numbers for every timed shape variant."""

    baselines: Baselines = Field(default_factory=Baselines)
    """Speedups against eager and against ``torch.compile``."""

    speedup_range: dict[str, float] = Field(default_factory=dict)
    """``min``, ``median`` and ``max`` speedup over the timed shapes whose speedup has an
    interval (derived from :attr:`per_shape`; empty when none has)."""

    shapes_without_interval: list[str] = Field(default_factory=list)
    """Timed shapes whose speedup has no interval (too few rounds for a bootstrap), left out
    of :attr:`speedup_range` (derived from :attr:`per_shape`)."""

    threads: int | None = None
    """CPU threads both workers were pinned to while timed."""

    mode: str = "cold"
    """``cold`` (caches flushed before each call) or ``hot``."""

    cache_flush: str = ""
    """How caches were flushed before each timed call (what was evicted, and how)."""

    budget_s: float | None = None
    """The time budget the timing phase was given."""

    stop_reason: str = ""
    """Why the adaptive stopping ended (CI reached, budget spent, round limit)."""

    verified_timed_calls: int = 0
    """Timed calls whose outputs were checked against the reference afterwards."""

    ruled_out_fault_rate: float | None = None
    """The per-call fault rate the clean verified timed calls rule out at 95% confidence
    (about 3/N after N clean calls): a kernel wrong more often than this would have been seen."""

    comparable: bool = True
    """False when the candidate used more cores than the thread count it was timed at (CPU
    time from /proc against wall time): its speedup then compares unequal work."""

    discarded_rounds: int = 0
    """Rounds voided because the reference worker got too little CPU during its batch."""

    process_spread: float | None = None
    """The standard deviation of ln(speedup) between fresh worker pairs on identical code at
    the default shape's call time (each shape has its own), measured once per machine (``source`` in ``process_spread_source``), added in quadrature to
    every speedup interval here: the rounds of one worker pair share its per-process bias, which
    no number of rounds removes."""

    process_spread_source: str = ""
    """``measured`` (this machine's cached measurement), ``measured with noisy pairs ...`` (a
    spread above 10% or wide intervals within pairs: kept 30 minutes, then measured again) or
    ``fallback`` (a fixed few percent)."""

    reruns: int = 0
    """Times the timing phase was restarted with fresh workers after a worker died."""

    elapsed_s: float = 0.0
    """Wall time of the timing phase."""

    duty_cycle: dict[str, float] = Field(default_factory=dict)
    """Where the timing phase's wall time went. ``reference`` and ``candidate``: the time
    inside that side's timed calls (as its worker reported them) over the controller's wall
    time around that side's batches, warm-up included (the rest is input generation, cache
    flushes and the round trip). ``phase``: the time inside every participant's timed calls
    over the whole phase's wall time (verification of timed outputs and preparing included):
    the share of the budget spent measuring kernels."""

    @model_validator(mode="after")
    def _range_from_measured_shapes(self) -> Timing:
        """A range over shapes without an interval would headline a speedup drawn from two
        samples a side (an A/A run's 2.28x): the range is derived here, from measured shapes
        only, and the rest are named."""
        if not self.per_shape:
            return self
        measured = [s.speedup for s in self.per_shape if s.has_interval]
        self.shapes_without_interval = [s.variant for s in self.per_shape if not s.has_interval]
        self.speedup_range = (
            {"min": min(measured), "median": statistics.median(measured), "max": max(measured)}
            if measured
            else {}
        )
        return self
