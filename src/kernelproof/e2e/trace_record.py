"""What the trusted tracer is asked, and what it finds: pure pydantic, no torch.

The tracer (:mod:`kernelproof.e2e.tracer`) runs the host, never a candidate, in its own
process. It is told which variants to run and which submodules the user wants replaced; it
answers with their constructor arguments, every call signature the host used, the share of
host time they took, and files (their state, recorded calls) the generated tasks load.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kernelproof.schema.envelope import CallSignature
from kernelproof.schema.variant import InputVariant


class TraceRun(BaseModel):
    """One shape of the host, and the input variants to run at it."""

    knobs: dict[str, int] = Field(default_factory=dict)
    """The host's knobs (empty: its own defaults)."""

    variants: list[InputVariant]
    """Input variants, built as the matrix builds them (seeds, values, layouts)."""


class TraceRequest(BaseModel):
    """Everything the tracer needs; written by the controller as JSON."""

    host_path: str
    """The host task file (for error messages and ``__file__``)."""

    host_source: str
    """Its text, as the controller read it."""

    targets: list[str]
    """Dotted submodule paths or module class names to trace."""

    runs: list[TraceRun]
    """The host variants to run; the first run's first variant is the default call."""

    init_seed: int
    """Seed before ``get_init_inputs()`` and the constructor, as the workers use it."""

    device: str = "cpu"
    dtype: str | None = None

    soak_steps: int = 0
    """Steps of the host's loop to run (and record signatures of) after the variants."""

    recorded_calls: int = 8
    """Calls per target whose inputs are saved, from the default call (for attribution)."""

    profile_repeats: int = 21
    """Host calls timed to measure the targets' share of host time (odd: a true median)."""

    out_dir: str
    """Folder the tracer writes its files into (created by the controller)."""


class InstanceTrace(BaseModel):
    """One replaced module instance in the host."""

    path: str
    """Its dotted path in the host."""

    init_args: list[Any]
    """Its constructor arguments, positional, defaults filled in (plain values only)."""

    init_repr: str
    """Python source of those arguments (a list literal) for generated tasks."""


class TargetTrace(BaseModel):
    """What the host does with one ``--replace`` target."""

    target: str
    """The target as the user wrote it."""

    class_name: str
    """The replaced module's class name."""

    class_module: str
    """``host`` when the class is defined in the host file, else its import path."""

    init_signature: str
    """The class's constructor signature, for error messages."""

    init_parameters: list[str] = Field(default_factory=list)
    """Names of the constructor's positional parameters, in order (knob names of the
    generated task)."""

    instances: list[InstanceTrace]
    """Every instance the target names, in the host's module order."""

    signatures: list[CallSignature] = Field(default_factory=list)
    """Distinct signatures of the host's calls to the target, in order of first use."""

    signature_counts: list[int] = Field(default_factory=list)
    """How many calls each signature had (same order)."""

    signature_sources: list[str] = Field(default_factory=list)
    """Where each signature was first seen: a variant's name or ``soak:STEP``."""

    signature_init: list[str] = Field(default_factory=list)
    """The constructor arguments (a list literal) of the instance that made each signature's
    first call: a host shape variant builds its modules with other sizes."""

    calls_file: str = ""
    """``torch.save`` file: the recorded calls (instance path, positional arguments) and each
    instance's state and constructor arguments."""

    recorded_calls: int = 0
    """How many calls the file holds."""


class TraceResult(BaseModel):
    """The tracer's answer."""

    ok: bool = True
    error: str = ""
    """Why the host could not be traced (one line, the host's fault or the target's)."""

    targets: list[TargetTrace] = Field(default_factory=list)

    host_call_s: float | None = None
    """Median seconds of one host call at the default shape (forward hooks attached)."""

    target_hook_share: list[float] = Field(default_factory=list)
    """Per target, its share of one host call by the forward hooks' wall clock: the median of
    per-call ratios (the cross-check of the profiler's)."""

    target_profiler_share: list[float | None] = Field(default_factory=list)
    """Per target, its share of host time by ``torch.profiler``: the summed durations of the
    ``record_function`` ranges around its outermost calls over those around the host's calls
    (device time on CUDA, where a call's wall clock times the launches only). None where the
    profiler gave nothing (``profiler_error`` says why)."""

    profiler_error: str = ""
    """Why the profiler's shares are missing, when they are."""

    rejected: list[str] = Field(default_factory=list)
    """Variants the host itself rejected (skipped, as the matrix skips them)."""

    soak_steps_run: int = 0
    """Soak steps the reference host ran."""
