"""The closed list of finding ids: every ``Finding.check`` is one of these.

A report consumer (CI annotations, the store, a leaderboard filter) keys on these ids, so they
are a public contract: add members, never rename one.
"""

from __future__ import annotations

from enum import Enum


class FindingCheck(str, Enum):
    """Stable identifier of the check that produced a finding.

    A ``str`` enum: a plain string that names a member validates into it, and an unknown one is
    rejected. ``str()`` and ``format()`` give the id itself, so messages, HTML and SARIF show
    ``input-mutation``, not ``FindingCheck.INPUT_MUTATION``.
    """

    # -- the task, the command and the candidate's file ------------------------------------
    TASK = "task"
    """The task (reference, inputs, POLICY, SHAPES) is at fault: the verdict is ``error``."""

    SETTINGS = "settings"
    """The command's settings are invalid together: the verdict is ``error``."""

    CANDIDATE_FILE = "candidate-file"
    """The candidate's file is unreadable or not in a known format."""

    SIZING = "sizing"
    """The default shape was scaled down to fit this machine's budget."""

    TASK_FORMAT = "task-format"
    """How the task's format was adapted (GPU MODE entries' non-size fields), and what of it
    could not be honoured (information, or ``warn`` when an entry is not run)."""

    CANDIDATE_KNOBS = "candidate-knobs"
    """The candidate's module copies some of the task's knobs; each shape re-renders them in
    both modules (information)."""

    WEIGHTS = "weights"
    """Some of the candidate's parameters could not be matched to the reference's weights."""

    DEGENERATE_TASK = "degenerate-task"
    """The task cannot tell right from wrong: its output ignores its inputs, or a mutant of the
    true output (zeros, a constant, a 1% perturbation) passes the comparator."""

    ORACLE = "oracle"
    """No float64 oracle could be built; the reference in its own dtype stood in for it."""

    # -- building and running ----------------------------------------------------------------
    BUILD = "build"
    """The candidate does not build or import."""

    CONSTRUCTOR = "constructor"
    """The candidate cannot be constructed with the reference's init inputs."""

    CALL = "call"
    """The candidate raises on the task's default inputs."""

    CRASH = "crash"
    """The candidate's worker died or hung."""

    # -- the correctness matrix --------------------------------------------------------------
    CORRECTNESS = "correctness"
    """A silently wrong answer on some variant the reference handles."""

    LIMITATION = "limitation"
    """A clear exception on a variant the reference handles: a stated limitation."""

    SKIPPED = "skipped"
    """Variants skipped because the reference rejects them or they exceed the budget."""

    COVERAGE = "coverage"
    """No variant ran to completion, so nothing was verified."""

    STOPPED_EARLY = "stopped-early"
    """Fail-fast scoring stopped at the first decisive failure: the rest of the matrix, the
    shrinking and the timing were not run, or (a candidate already ``suspect``) the timing
    alone (``report.pipeline`` says which stage decided)."""

    DEADLINE = "deadline"
    """The verification reached its caller's deadline before its verdict was decided: the
    verdict is ``error`` (the command's limit, not a fault found in the candidate)."""

    NONDETERMINISM = "nondeterminism"
    """Two runs on the same input gave different outputs."""

    NON_FINITE_OUTPUT = "non-finite-output"
    """NaN or Inf where the reference is finite."""

    MASKS_NON_FINITE = "masks-non-finite"
    """Finite values where the reference gives NaN or Inf: the candidate masks bad input."""

    NON_FINITE_KIND = "non-finite-kind"
    """Non-finite in both, but NaN against Inf (or opposite signs)."""

    # -- per-call probes (reported by the candidate worker, weighed by the controller) -------
    INPUT_MUTATION = "input-mutation"
    """The candidate changed an input in place."""

    OUTPUT_TYPE = "output-type"
    """An output is not exactly ``torch.Tensor`` (it may be computed lazily)."""

    OUTPUT_ALIASES_INPUT = "output-aliases-input"
    """An output shares memory with an input."""

    OUTPUT_ALIASES_EARLIER_OUTPUT = "output-aliases-earlier-output"
    """An output shares memory with an earlier call's output: a cached or replayed buffer."""

    OUTPUT_UNSTABLE = "output-unstable"
    """An output changed after the call returned: work continues unseen by the timer."""

    NEW_THREADS = "new-threads"
    """Python threads still alive after the call."""

    TAMPERING = "tampering"
    """The candidate replaced functions the harness or torch relies on."""

    AUDIT_FILE_ACCESS = "audit-file-access"
    """A PEP 578 hook saw file access outside the sandbox."""

    AUDIT_NETWORK = "audit-network"
    """A PEP 578 hook saw a socket."""

    AUDIT_SUBPROCESS = "audit-subprocess"
    """A PEP 578 hook saw a subprocess or exec."""

    AUDIT_INTROSPECTION = "audit-introspection"
    """A PEP 578 hook saw frame walking, ``gc`` or similar introspection."""

    # -- the op audit ------------------------------------------------------------------------
    PASSTHROUGH = "passthrough"
    """The candidate ran the reference's own aten ops and no custom code."""

    DEAD_KERNEL = "dead-kernel"
    """Custom kernels are defined in the source, none of them ran."""

    FALLBACK = "fallback"
    """The custom path ran on some calls and torch ops stood in on others."""

    STRICT_HEAVY_OP = "strict-heavy-op"
    """Under ``--strict``, the candidate ran one of the reference's heavy ops."""

    PRECISION_CAST = "precision-cast"
    """Casts to a lower precision inside the computation."""

    CUSTOM_KERNELS = "custom-kernels"
    """Which custom kernels ran (information)."""

    TORCH_COMPILE = "torch-compile"
    """The candidate uses ``torch.compile`` (information)."""

    TORCH_REWRITE = "torch-rewrite"
    """A pure PyTorch rewrite with different ops (information)."""

    # -- timing ------------------------------------------------------------------------------
    TIMING = "timing"
    """The default shape could not be timed."""

    TIMING_CRASH = "timing-crash"
    """A worker died or raised during timing."""

    TIMED_OUTPUT = "timed-output"
    """An output of a timed call was wrong."""

    TIMING_NOISE = "timing-noise"
    """A timing statistic carries a noise note (outliers, spread, too few samples)."""

    TIMER_VALUES = "timer-values"
    """A worker reported impossible per-call times."""

    TIMER_CROSS_CHECK = "timer-cross-check"
    """A worker's clock disagrees with the controller's around a batch."""

    SHAPE_SPECIFIC_SPEEDUP = "shape-specific-speedup"
    """The speedup holds at the default shape only."""

    BELOW_FLOOR = "below-floor"
    """A median time below the speed-of-light floor."""

    # -- the static scan (supporting evidence, at most ``warn``) ----------------------------
    STATIC_SYNTAX = "static-syntax"
    """The source does not parse."""

    STATIC_INCOMPLETE = "static-incomplete"
    """A static detector gave up; its evidence is missing."""

    STATIC_LANGUAGES = "static-languages"
    """The kernel languages and custom kernels the source uses."""

    STATIC_FALLBACK = "static-fallback"
    """A try/except guards a custom kernel, or its handler runs torch."""

    STATIC_CONCURRENCY = "static-concurrency"
    """Threads, processes, forks, asyncio or CUDA side streams in the source."""

    STATIC_DYNAMIC_CODE = "static-dynamic-code"
    """``exec``/``eval``/``importlib`` or attribute names built at run time."""

    STATIC_TIMER = "static-timer"
    """References to clocks, events and synchronize, or patched module attributes."""

    STATIC_INTROSPECTION = "static-introspection"
    """``gc``, ``inspect``, frame walking, ``sys.modules``, ``ctypes`` in the source."""

    STATIC_IO = "static-io"
    """Files, network, subprocesses in the source."""

    STATIC_INHERITANCE = "static-inheritance"
    """``ModelNew`` is, or derives from, the reference ``Model``."""

    STATIC_CACHING = "static-caching"
    """Persistent caches keyed on pointers, ids, shapes or input hashes."""

    STATIC_UNINITIALIZED = "static-uninitialized"
    """An ``empty`` allocation returned with no visible write to it."""

    STATIC_PRECISION = "static-precision"
    """Casts to lower precision, autocast, TF32 or half types in the source."""

    # -- evidence gathered outside the candidate's process (reserved for the sandbox work) --
    SANDBOX = "sandbox"
    """The OS sandbox could not be set up, or was breached."""

    CPU_TIME = "cpu-time"
    """CPU time read from ``/proc`` contradicts the candidate's wall time."""

    UNTIMED_WORK = "untimed-work"
    """The candidate's batches hold more untimed time than the reference's: it works outside
    the timed calls, or under-reports its call times."""

    RAN_WHILE_FROZEN = "ran-while-frozen"
    """The candidate's processes used CPU time while frozen between requests (read from /proc):
    it worked while it was not being asked."""

    TIMING_INCONCLUSIVE = "timing-inconclusive"
    """A check that rests on time or scheduling could not decide: the machine kept the workers
    waiting for a CPU (read from /proc), so the evidence is void, not the candidate's."""

    REFERENCE_ROUND_STOLEN = "reference-round-stolen"
    """The reference worker lost CPU time during a timed round (it was signalled or starved)."""

    OP_AUDIT_CONTRADICTION = "op-audit-contradiction"
    """The in-process op audit contradicts evidence gathered outside the process."""

    NATIVE_STACKS = "native-stacks"
    """Stacks sampled from outside name a library kernel the op audit did not see."""

    TIMING_RERUN = "timing-rerun"
    """A timing phase was rerun because its evidence was unreliable."""

    INTERNAL_ERROR = "internal-error"
    """kernelproof's own code failed during a stage: the verdict is ``error``, and what was
    gathered before it stays in the report."""

    ARTIFACT_PIN = "artifact-pin"
    """A cached artifact does not match the hash it was pinned by."""

    THREAD_COUNT = "thread-count"
    """The candidate ran on more threads than the fixed, reported count."""

    # -- end to end (kernelproof e2e) ------------------------------------------------------
    SUBSTITUTION = "substitution"
    """The candidate cannot take the replaced module's place in the host (constructor
    arguments or state do not match), or the target names nothing in the host."""

    E2E_ENVELOPE = "e2e-envelope"
    """The host calls a replaced module at signatures the isolated matrix did not cover; each
    was verified in isolation, or the limit of such checks was reached."""

    E2E_CORRECTNESS = "e2e-correctness"
    """The host's outputs with the substitution are wrong although the module passed alone."""

    SOAK_MEMORY = "soak-memory"
    """The candidate's worker grows in memory over the host's loop, beyond the reference's."""

    SOAK_DRIFT = "soak-drift"
    """The host's outputs drift beyond tolerance over the steps of its loop."""

    SOAK_NONDETERMINISM = "soak-nondeterminism"
    """Two runs of the same steps gave different outputs."""

    E2E_SPEED = "e2e-speed"
    """The host's measured speedup against what the isolated speedup predicts (Amdahl)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class EvidenceBasis(str, Enum):
    """What a finding rests on: whether the candidate could have forged it (docs/security.md)."""

    OUTSIDE = "outside"
    """Facts gathered outside the candidate's process: the controller's comparison of the bytes
    it returned, its own clock, /proc, the kernel's exit status, stacks sampled from outside, the
    task and the settings themselves. The candidate cannot forge these."""

    CANDIDATE = "candidate"
    """Reported from inside the candidate's process (probes, op records, audit hooks, the tamper
    snapshot): evidence only, cross-checked against outside facts, never trusted alone."""

    STATIC = "static"
    """Read from the candidate's source text; never decides a verdict on its own."""


_CANDIDATE_REPORTED = {
    "input-mutation",
    "output-aliases-input",
    "output-aliases-earlier-output",
    "output-unstable",
    "new-threads",
    "tampering",
    "audit-file-access",
    "audit-network",
    "audit-subprocess",
    "audit-introspection",
    "passthrough",
    "dead-kernel",
    "fallback",
    "strict-heavy-op",
    "precision-cast",
    "custom-kernels",
    "torch-compile",
    "torch-rewrite",
    "timer-values",
}


def evidence_basis(check: FindingCheck) -> EvidenceBasis:
    """The basis of a check's evidence (see :class:`EvidenceBasis`)."""
    if check.value.startswith("static-"):
        return EvidenceBasis.STATIC
    if check.value in _CANDIDATE_REPORTED:
        return EvidenceBasis.CANDIDATE
    return EvidenceBasis.OUTSIDE
