"""The ``e2e`` section of a report: a kernel checked inside its host model and over many steps.

Pure pydantic. The report's own ``correctness`` and ``timing`` sections hold the host's run
(the host as the reference, the host with the substitution as the candidate); this section
holds what only an end-to-end check has: each substitution's isolated verdict and envelope
against the host's call signatures, the error attributed per replaced call, the soak's
curves, and the Amdahl table.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.envelope import CallSignature, Envelope
from kernelproof.schema.interval import SpeedupInterval
from kernelproof.schema.verdict import Verdict


class SignatureCoverage(BaseModel):
    """One signature the host called a replaced module with, against the isolated matrix."""

    signature: CallSignature
    """Shapes, dtypes, strides, device of the call's arguments."""

    calls: int
    """How many of the host's calls (all variants and soak steps) had it."""

    first_seen: str
    """The host variant (or ``soak:STEP``) it was first seen in."""

    covered: bool
    """Whether the isolated report's envelope contains it."""

    check: Literal["matrix", "verified-here", "not-checked"]
    """``matrix``: covered by the isolated matrix; ``verified-here``: uncovered and verified in
    isolation at this exact signature; ``not-checked``: uncovered, and its verification
    stopped before reaching it (a crash; its findings say why). Every uncovered signature is
    checked (:mod:`kernelproof.e2e.envelope`)."""

    seeds: int | None = None
    """Seeds it was verified with (``verified-here`` only): the run's for the first
    :data:`kernelproof.e2e.envelope.FULL_SEED_CHECKS`, one for the rest."""

    verdict: Verdict | None = None
    """The verdict of the check at this signature (``verified-here`` only)."""

    error_ratio: float | None = None
    """Its worst error ratio against the oracle (``verified-here`` only)."""


class Substitution(BaseModel):
    """One ``--replace TARGET=CANDIDATE[:TASK]`` and its isolated verification."""

    target: str
    """The dotted submodule path or module class name, as given."""

    candidate: str
    """The candidate file."""

    task: str | None = None
    """The task file given for the isolated check; None when it was generated from the host
    (the replaced module, its constructor arguments and state, inputs shaped like its first
    call)."""

    class_name: str
    """The replaced module's class."""

    paths: list[str]
    """Every path in the host the target replaced."""

    init_signature: str
    """The replaced class's constructor signature."""

    init_args: list[object] = Field(default_factory=list)
    """The first instance's constructor arguments, as ``ModelNew`` receives them."""

    isolated_verdict: Verdict
    """The verdict of ``verify`` on the module alone."""

    isolated_summary: str = ""
    """Its one-line summary."""

    isolated_speedup: float | None = None
    """Its speedup at the default shape (None without timing)."""

    isolated_speedup_ci: SpeedupInterval | None = None
    """Its confidence interval."""

    isolated_duration_s: float = 0.0
    """Seconds the isolated verification took."""

    envelope: Envelope | None = None
    """The isolated report's envelope: the signatures its matrix verified."""

    coverage: list[SignatureCoverage] = Field(default_factory=list)
    """Every signature the host used, covered or not."""


class CallAttribution(BaseModel):
    """The candidate's local error at one call the reference host made to a replaced module."""

    target: str
    call: int
    """Index among the recorded calls (the host's first calls to the target)."""

    path: str
    """The instance the call went to."""

    error_ratio: float | None
    """Candidate error over the module's own float32 error, against the float64 oracle of the
    module on those exact inputs; None when the call was not compared."""

    error: float | None = None
    """The candidate's relative RMS error against that oracle."""

    passed: bool
    """Whether it is within the tolerance model."""

    stream: Literal["reference", "substituted"] = "reference"
    """Whose inputs: the reference host's recorded call (``reference``), or the host's own
    call with the substitution in place, where earlier replaced calls already fed it the
    candidate's outputs (``substituted``)."""


class Attribution(BaseModel):
    """Where the host's error comes from: each replaced call's local error, and what the
    host's outputs show (amplification: host error over the worst local error)."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    calls: list[CallAttribution] = Field(default_factory=list)
    """The candidate on the reference host's recorded calls."""

    max_local_error_ratio: float | None = None
    """The worst error ratio over the replayed calls."""

    max_local_error: float | None = None
    """The worst relative RMS error over the replayed calls."""

    stream_calls: list[CallAttribution] = Field(default_factory=list)
    """The candidate on the substituted host's own calls (the same first calls per target,
    each with the inputs the host computed from the candidate's earlier outputs)."""

    max_stream_error_ratio: float | None = None
    """The worst error ratio over the substituted stream's calls."""

    max_stream_error: float | None = None
    """The worst relative RMS error over them."""

    stream_note: str = ""
    """Why the substituted stream stopped before all its calls were compared, if it did."""

    host_error_ratio: float | None = None
    """The worst error ratio of the host's outputs on the default shape's seeds."""

    host_error: float | None = None
    """The worst relative RMS error of the host's outputs there."""

    amplification: float | None = None
    """``host_error`` over the worst local error (the substituted stream's when it ran, else
    the replayed calls'): how many times larger the error is at the host's outputs than at
    the replaced calls (above 1, the host amplifies it)."""


class LatencyCurve(BaseModel):
    """Per-step latency of one side of the soak, with percentiles over time."""

    samples_s: list[float] = Field(default_factory=list)
    """Seconds per step, as the worker timed the step (the candidate's own clock: evidence,
    not proof)."""

    p50_s: float | None = None
    p90_s: float | None = None
    p99_s: float | None = None
    first_quarter_p50_s: float | None = None
    last_quarter_p50_s: float | None = None


class DriftRepro(BaseModel):
    """A soak's drift shrunk: the smallest host knobs and fewest steps that still drift."""

    knobs: dict[str, int]
    """The host's knobs at which it still drifts (all of them, shrunk or not)."""

    steps: int
    """Soak steps that show it: the first drifting step at those knobs, plus one."""

    tries: int = 0
    """Trial soaks run while shrinking."""

    shrunk: bool = False
    """Whether anything got smaller than the run's own knobs and first step."""

    seconds: float = 0.0
    """Wall-clock seconds the shrinking took."""

    command: str = ""
    """The ``kernelproof e2e`` command that shows it (``--knobs``, ``--soak``)."""


class Soak(BaseModel):
    """Many steps of the host's loop, with and without the substitution."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    steps: int
    """Steps both sides ran."""

    loop: Literal["soak_steps", "fresh-inputs"]
    """The host's own ``soak_steps`` generator, or repeated fresh inputs."""

    rss_bytes: dict[str, list[int]] = Field(default_factory=dict)
    """Per side (``candidate``, ``reference``), the worker's resident memory after each step,
    read from /proc by the controller."""

    growth_bytes_per_step: dict[str, float] = Field(default_factory=dict)
    """Least-squares slope of the resident memory over the second half of the steps, per side,
    and ``excess``: the candidate's beyond the reference's."""

    memory_limit_bytes: int = 0
    """The memory the projection runs out at: the worker's limit or the machine's memory."""

    projected_failure_step: int | None = None
    """The step at which the excess growth would exhaust it (None: no significant growth)."""

    cuda_memory: Literal["measured", "not-applicable", "not-reported"] = "not-applicable"
    """CUDA memory per step: ``measured`` on a CUDA device, ``not-applicable`` elsewhere (the
    CPU path has no device memory; resident memory covers it), ``not-reported`` when a worker
    on CUDA did not say."""

    cuda_allocated_bytes: dict[str, list[int]] = Field(default_factory=dict)
    """Per side, ``torch.cuda.memory_allocated`` after each step, as the worker reported it
    (the controller cannot read another process's device memory from /proc; the candidate's
    figure is its own word, evidence)."""

    cuda_reserved_bytes: dict[str, list[int]] = Field(default_factory=dict)
    """Per side, ``torch.cuda.memory_reserved`` (the caching allocator's pool) after each
    step."""

    cuda_growth_bytes_per_step: dict[str, float] = Field(default_factory=dict)
    """Slopes of the allocated memory, as ``growth_bytes_per_step`` (``excess`` included)."""

    cuda_memory_limit_bytes: int = 0
    """The device's total memory, what a device leak runs out of."""

    cuda_projected_failure_step: int | None = None
    """The step at which the excess device growth (allocated, or reserved when it fails
    sooner) would exhaust it."""

    drift_ratios: list[float | None] = Field(default_factory=list)
    """Per step, the worst error ratio of the candidate's outputs against the float64 oracle
    of the same steps (relative to the reference's own error)."""

    first_drift_step: int | None = None
    """The first step beyond tolerance, if any."""

    max_drift_ratio: float | None = None

    drift_repro: DriftRepro | None = None
    """The drift shrunk to its smallest knobs and fewest steps (None: no drift, or shrinking
    is off)."""

    repeated_steps: int = 0
    """Steps run a second time by a fresh model to look for nondeterminism."""

    nondeterminism: float | None = None
    """The largest absolute difference between the two runs of the same steps (0.0: bitwise
    identical)."""

    latency: dict[str, LatencyCurve] = Field(default_factory=dict)
    """Per side, the per-step latency and its percentiles."""


class AmdahlRow(BaseModel):
    """One replaced target's share of host time, its isolated speedup, and its speedup at the
    host's own most used signature."""

    target: str
    share: float
    """Fraction of one host call spent inside the target's modules (reference host): the
    profiler's figure when it ran (``share_source``), else the forward hooks'. Amdahl uses it."""

    share_source: Literal["profiler", "hooks"] = "hooks"
    """Where ``share`` comes from: ``torch.profiler`` ranges around the target's calls, or the
    forward hooks' wall clock (when the profiler gave nothing)."""

    share_hooks: float | None = None
    """The forward hooks' figure, kept as a cross-check of the profiler's."""

    share_profiler: float | None = None
    """The profiler's figure (None when it could not run)."""

    isolated_speedup: float | None = None

    host_signature: str | None = None
    """The host's dominant call signature for the target (most calls times elements), when it
    differs from the isolated timing's inputs and was timed."""

    host_signature_calls: int | None = None
    """How many of the host's traced calls had it."""

    host_signature_speedup: float | None = None
    """The candidate against the module at ``host_signature`` (interleaved, as ``verify``
    times): what the host really gets from it."""

    host_signature_speedup_ci: SpeedupInterval | None = None


class Speed(BaseModel):
    """The host's speedup, measured, against what the isolated speedups predict."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    rows: list[AmdahlRow] = Field(default_factory=list)
    host_call_s: float | None = None
    """Median seconds of one reference host call (the tracer's)."""

    predicted_speedup: float | None = None
    """Amdahl: ``1 / ((1 - sum share) + sum share / isolated speedup)``."""

    measured_speedup: float | None = None
    """The host's speedup from the interleaved timing of the host run (report ``timing``)."""

    measured_speedup_ci: SpeedupInterval | None = None

    predicted_at_host_signatures: float | None = None
    """Amdahl again, with each target's speedup at the host's dominant signature where it was
    timed (its isolated speedup elsewhere)."""

    shortfall: bool = False
    """The measured interval falls well short of the prediction: the isolated gain did not
    carry over (:data:`kernelproof.e2e.amdahl.SHORTFALL_SHARE`)."""

    cause: Literal["host-signature", "host-work", "amdahl", "none"] | None = None
    """What explains the host's speedup: ``host-signature``, the candidate is slower at the
    host's own signature than in isolation; ``host-work``, a shortfall the signature timing
    does not explain (the host's own work around the kernel); ``amdahl``, the modules are too
    small a share to matter; ``none``, the measurement agrees with the prediction. None: not
    enough was measured to say."""

    profiler_error: str = ""
    """Why the profiler's shares are missing (the hooks' stand in), when they are."""

    shares_disagree: bool = False
    """The profiler's and the forward hooks' shares differ by more than
    :data:`kernelproof.e2e.amdahl.SHARE_DISAGREEMENT` for some target."""

    explanation: str = ""
    """One or two sentences: prediction against measurement, and what explains a gap."""


class E2E(BaseModel):
    """Everything the end-to-end check found, beyond the host run's own sections."""

    model_config = ConfigDict(ser_json_inf_nan="null")

    host: str
    """The host task file."""

    substitutions: list[Substitution] = Field(default_factory=list)
    attribution: Attribution | None = None
    soak: Soak | None = None
    speed: Speed | None = None
    host_verdict: Verdict | None = None
    """The verdict of the host run alone (host with the substitution against the host)."""

    command: str = ""
    """The ``kernelproof e2e`` command that reruns this check (same seed)."""

    durations_s: dict[str, float] = Field(default_factory=dict)
    """Seconds per phase: ``trace``, ``isolated``, ``signatures``, ``host``, ``attribution``,
    ``soak``, ``host-signature`` (the candidate timed at the host's dominant signature),
    ``total``."""
