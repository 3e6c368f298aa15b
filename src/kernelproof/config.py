"""One resolved configuration for a verification.

Precedence, lowest to highest: built-in defaults < named profile < task hints (the task's
``POLICY``) < explicit arguments (CLI flags or API keywords). Each layer is a partial mapping
of :class:`Settings` fields; ``None`` or absence means "inherit". The fields are declared once,
on :class:`Settings`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelproof.errors import UsageError

Device = Literal["cpu", "cuda"]
DType = Literal["float32", "float16", "bfloat16", "float64"]


class Settings(BaseModel):
    """Every knob of one verification, resolved to a concrete value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: Device = "cpu"
    dtype: DType | None = None
    """Working dtype for floating inputs and parameters; ``None`` keeps the task's own."""

    seeds: int = Field(default=5, ge=1)
    """Seeds at the default shape. Other variants run on the first seed."""

    base_seed: int | None = None
    """Seed of the run's random draws; ``None`` draws one fresh (recorded in the report)."""

    input_seeds: list[int] | None = None
    """Exact input seeds for the default shape (a repro); ``None`` draws them from the base."""

    default_knobs: dict[str, int] | None = None
    """Knob values for the default shape instead of the task's own (a repro, or a chosen
    size); no automatic scaling down then."""

    inputs_file: str | None = None
    """Saved call arguments (a guard incident's ``inputs.pt``) to run as one more cell of the
    default shape (``saved:<file name>``); the matrix is then the default shape's seeds and
    that cell, and failures are not shrunk (the saved values are the repro)."""

    shrink: bool = True
    """Shrink each kind of failure to its smallest failing shape and write its repro."""

    fail_fast: bool = False
    """Stop at the first decisive failure: the first silently wrong cell ends the matrix
    (``incorrect`` cannot be outranked by anything a later stage finds, bar the task's own
    fault), shrinking is skipped, and a candidate ``suspect`` after the op audit is not
    timed (timing could only make it ``incorrect``, never ``verified``; the verdict can then
    differ from the full verification's in that one way). The report holds fewer cells and
    says which stage decided (``pipeline``). For reward loops, where most candidates are
    rejected and time-to-reject decides throughput."""

    shape_variants: bool = True
    """Vary the task's knobs. ``False`` restricts the matrix to fixed shapes, as KernelBench does."""

    generated_shapes: bool = True
    """Derive shape variants from the knobs (half, odd, prime, 1, double), besides the task's
    declared ``SHAPES``. The quick profile keeps only the declared ones."""

    value_variants: bool = True
    layout_variants: bool = True
    timing: bool = True
    budget_s: float = Field(default=20.0, gt=0)
    """Wall-clock budget of the timing phase, in seconds."""

    timing_shapes: bool = True
    """Time every shape variant, not only the default."""

    stress_shapes: bool = False
    """Also push each knob, one at a time, to the largest size whose call fits the budget
    (``max_call_bytes``, ``max_call_flops``). Compared with the reference's own output, not
    timed; the report's ``correctness.largest_verified`` says how far each knob got."""

    compile_baseline: bool = True
    """Also time ``torch.compile`` of the reference at the default shape."""

    input_pool: bool = True
    """Timed calls draw their inputs from a pool of sets built once per shape and changed in
    place before every use (``harness/input_pool.py``) instead of building each from its
    seed. A task whose inputs need structure across elements (a symmetric matrix, sorted
    rows) sets ``POLICY = {"input_pool": False}``."""

    hot: bool = False
    """Time with warm caches instead of flushing them before each call."""

    cache_flush: Literal["data", "full"] = "data"
    """How a cold call's caches are flushed on CPU: ``data`` evicts the lines of the call's own
    data (its inputs and the model's tensors) with a compiled cache-line flush helper, in
    microseconds; ``full`` writes a buffer twice the last-level cache (milliseconds per call,
    and it also evicts code and tensors a candidate hides from Python). ``data`` falls back to
    ``full`` where the helper cannot be built. CUDA always flushes the whole L2."""

    cuda_graphs: bool = False
    """On CUDA, time graph replays of the call (launch overhead removed)."""

    min_rounds: int = Field(default=6, ge=1)
    """Rounds of a shape before its interval may stop the timing: a bootstrap over fewer
    rounds underestimates the spread (it only reshuffles the few values it has seen)."""

    max_rounds: int = Field(default=10_000, ge=1)
    """Rounds of a shape at most; in practice the budget ends a phase long before."""

    target_ci: float = Field(default=0.02, gt=0, lt=1)
    """Stop timing a shape once the speedup's CI half-width is this fraction of it."""

    allow_torch: bool = False
    """Torch ops in the candidate are expected (a PyTorch rewrite): passthrough is only ``info``."""

    strict: bool = False
    """Any of the reference's heavy ops executed by the candidate is ``suspect``."""

    atol: float | None = Field(default=None, ge=0)
    rtol: float | None = Field(default=None, ge=0)
    tolerance_factor: float = Field(default=3.0, gt=1)
    """How many times the reference's own error (against the float64 oracle) a candidate may err."""

    build_timeout_s: float = Field(default=600.0, gt=0)
    """Import plus construction of the candidate; C++ builds take ~40 s cold on 2 cores."""

    call_timeout_s: float = Field(default=120.0, gt=0)
    memory_limit_gib: float = Field(default=8.0, gt=0)
    """Resident memory a worker may use before it is killed and reported as out of memory."""

    max_call_bytes: int = Field(default=64 << 20, gt=0)
    """Inputs + outputs + parameters of one call above which the default shape is scaled down.
    Each call is copied several times (oracle in float64, probe snapshots, transport), so
    64 MiB keeps one verification within seconds on a 2-core machine."""

    max_call_flops: float = Field(default=4e9, gt=0)
    """Estimated FLOPs of one call above which the default shape is scaled down (~0.5 s here)."""

    sandbox: bool = True
    """Run the candidate worker in the OS sandbox (namespaces, Landlock, seccomp, limits).
    Only ``benchmarks/sandbox_cost.py`` turns this off, to measure what it costs; a
    verification without it cannot be ``verified`` unless ``insecure_sandbox`` is set."""

    insecure_sandbox: bool = False
    """Accept a candidate worker whose sandbox is incomplete (a kernel without user
    namespaces or Landlock): the gap is reported as a ``warn`` instead of ``suspect``."""

    native_audit: bool = True
    """Sample both workers' native stacks from outside (py-spy) during the correctness matrix:
    which library functions the time went to, whatever the candidate's process reports. Costs
    about a second per verification (attaching and symbolising libtorch)."""

    integrity_probes: bool = True
    """Run the per-call integrity probes, audit hooks and op audit in the candidate worker.
    Only ``benchmarks/probe_cost.py`` turns this off, to measure what the probes cost."""

    mode: Literal["as-built", "eval", "train"] = "as-built"
    """Module mode of both models: ``as-built`` keeps each module's own (PyTorch's default is
    training mode, so BatchNorm uses batch statistics, as in KernelBench's harness, which
    never calls ``.eval()``); ``eval`` or ``train`` sets every module. Reported as
    ``correctness.module_mode``."""

    threads: int | None = Field(default=None, ge=1)
    """Intra-op threads in each worker; ``None`` uses all cores (reported either way)."""

    def tolerance_mode(self) -> Literal["oracle", "fixed"]:
        return "fixed" if self.atol is not None or self.rtol is not None else "oracle"


class SettingsOverrides(TypedDict, total=False):
    """Some :class:`Settings` fields, given explicitly (CLI flags or API keywords): the top
    layer of :func:`resolve_settings`. Every key is a Settings field of the same type (a test
    holds the two together), so ``verify(..., budget_s=3)`` is checked where it is written."""

    device: Device
    dtype: DType | None
    seeds: int
    base_seed: int | None
    input_seeds: list[int] | None
    default_knobs: dict[str, int] | None
    inputs_file: str | None
    shrink: bool
    fail_fast: bool
    shape_variants: bool
    generated_shapes: bool
    value_variants: bool
    layout_variants: bool
    timing: bool
    budget_s: float
    timing_shapes: bool
    stress_shapes: bool
    compile_baseline: bool
    input_pool: bool
    hot: bool
    cache_flush: Literal["data", "full"]
    cuda_graphs: bool
    min_rounds: int
    max_rounds: int
    target_ci: float
    allow_torch: bool
    strict: bool
    atol: float | None
    rtol: float | None
    tolerance_factor: float
    build_timeout_s: float
    call_timeout_s: float
    memory_limit_gib: float
    max_call_bytes: int
    max_call_flops: float
    sandbox: bool
    insecure_sandbox: bool
    native_audit: bool
    integrity_probes: bool
    mode: Literal["as-built", "eval", "train"]
    threads: int | None


#: Environment variable naming kernelproof's cache folder (calibrations, compiled helpers).
CACHE_DIR_ENV = "KERNELPROOF_CACHE_DIR"


def cache_dir() -> Path:
    """kernelproof's cache folder: ``$KERNELPROOF_CACHE_DIR`` or ``~/.cache/kernelproof``."""
    configured = os.environ.get(CACHE_DIR_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "kernelproof"


#: Named profiles for common set-ups. Each is a layer over the defaults.
PROFILES: dict[str, dict[str, Any]] = {
    "default": {},
    "ci": {"seeds": 3, "budget_s": 5.0, "compile_baseline": False},
    "quick": {
        "seeds": 2,
        "budget_s": 2.0,
        "compile_baseline": False,
        "timing_shapes": False,
        "generated_shapes": False,
        "native_audit": False,
    },
    "bench": {"seeds": 3, "budget_s": 6.0},
    "kernelbench-compat": {
        "shape_variants": False,
        "value_variants": False,
        "layout_variants": False,
        "atol": 1e-2,
        "rtol": 1e-2,
        "allow_torch": True,
    },
    "strict": {"strict": True, "seeds": 8, "cache_flush": "full"},
    # RL reward loops: stop at the first decisive failure, a short timing phase at the
    # default shape (its speedup's lower bound is the reward), no repro shrinking.
    # A candidate that hangs holds one of the batch's slots until its timeout: 30 s per call
    # (a default-shape call is sized to about 0.5 s here) and 180 s per build (a C++
    # extension takes about 40 s cold on two cores).
    "rl": {
        "seeds": 3,
        "budget_s": 3.0,
        "compile_baseline": False,
        "timing_shapes": False,
        "fail_fast": True,
        "shrink": False,
        "call_timeout_s": 30.0,
        "build_timeout_s": 180.0,
    },
}

#: Task ``POLICY`` keys a task may set, mapped onto settings fields.
TASK_POLICY_KEYS = {
    "atol",
    "rtol",
    "tolerance_factor",
    "allow_torch",
    "strict",
    "seeds",
    "mode",
    "input_pool",
}


def resolve_settings(
    *,
    profile: str = "default",
    task_policy: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge the layers in precedence order into one :class:`Settings`."""
    if profile not in PROFILES:
        raise UsageError(
            f"unknown profile {profile!r}; choose one of: {', '.join(sorted(PROFILES))}"
        )
    merged: dict[str, Any] = dict(PROFILES[profile])
    for key, value in (task_policy or {}).items():
        if key in TASK_POLICY_KEYS and value is not None:
            merged[key] = value
    for key, value in (overrides or {}).items():
        if value is not None:
            merged[key] = value
    try:
        return Settings(**merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']} (got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise UsageError(f"invalid settings: {problems}") from None
