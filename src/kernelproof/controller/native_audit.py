"""The out-of-process op audit: py-spy samples both workers' native stacks during the matrix.

The in-process op audit runs inside the candidate's process and can be blinded or fed other
op names; the stacks the kernel shows py-spy from outside cannot. Both workers are sampled while
the correctness matrix runs: the candidate's profile says which library functions its time
went to, and a candidate that spends most of it in the very library routine the reference
uses, with no code of its own, passed the work through (``native-stacks``, ``suspect``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from kernelproof.checks.native_stacks import (
    PASSTHROUGH_MIN_SAMPLES,
    NativeProfile,
    StackSampler,
    dominant_kernel,
    kernel_passthrough_evidence,
    passthrough_evidence,
    timed_passthrough,
)
from kernelproof.checks.op_policy import KERNEL_FAMILIES, kernel_families
from kernelproof.schema import Finding, FindingCheck, Severity
from kernelproof.workers.process import WorkerProcess

#: Entries of each profile kept in the report.
REPORTED = 8


class NativeAudit:
    """Samplers on both workers between ``start`` and ``finish``."""

    def __init__(
        self,
        reference: WorkerProcess | None,
        candidate: WorkerProcess | None,
        reference_stacks: NativeProfile | None = None,
    ) -> None:
        """``reference_stacks``: the reference's profile sampled in an earlier verification
        of the same task (a session's memo); the reference worker is then not sampled, as
        its answers are replayed and it runs nothing."""
        self.passthrough: str | None = None
        self.reference_stacks = reference_stacks
        self.samplers: dict[str, tuple[StackSampler, WorkerProcess]] = {}
        #: Why the candidate is not sampled ('' when it is).
        self.unsampled = ""
        if reference_stacks is not None and not reference_stacks.available:
            # Sampling costs the candidate a pause per sample and the machine a py-spy start
            # (about 0.6 s a verification here); without the reference's profile no rule
            # could use what it saw. A profile that shows no library routine still needs the
            # candidate's checked calls sampled: the timed rounds' stacks are compared with
            # them, and a candidate that passes the reference's own kernel through only
            # while timed (attack 35c) is told apart by that comparison alone. Skipping it
            # let 35c through every warm session of its task.
            self.unsampled = (
                f"not sampled: the reference's profile is unavailable ({reference_stacks.reason})"
            )
        for role, worker in (("reference", reference), ("candidate", candidate)):
            if role == "reference" and reference_stacks is not None:
                continue
            if role == "candidate" and self.unsampled:
                continue
            if worker is not None and worker.tree is not None and worker.alive:
                self.samplers[role] = (StackSampler(), worker)

    running: bool = False
    kernel_level: bool = False
    """Whether :attr:`passthrough` names the reference's dominant kernel rather than a
    library routine."""
    candidate_stacks: NativeProfile | None = None
    """The candidate's profile of its checked calls (the default shape's cells), once
    :meth:`finish` has run; None when it was not sampled."""
    reference_window: tuple[float, float] | None = None
    """(seconds on a CPU, seconds waiting for one) of the reference's main thread during the
    sampled window, when it was sampled."""
    _schedstat_started: tuple[float, float] | None = None

    def start(self) -> None:
        _start_frozen_with(self.samplers.values())
        self._schedstat_started = self._reference_schedstat()
        self.running = True

    def interrupt(self) -> None:
        """End the sampled window; the samplers write their profiles until :meth:`finish`."""
        for sampler, worker in self.samplers.values():
            _freeze_with(sampler, worker, False)  # resumed, so that it can take its SIGINT
            sampler.interrupt()
        ended = self._reference_schedstat()
        if ended is not None and self._schedstat_started is not None:
            self.reference_window = (
                ended[0] - self._schedstat_started[0],
                ended[1] - self._schedstat_started[1],
            )

    def reference_profile_reusable(self) -> bool:
        """Whether the reference's profile may stand for the task in later verifications:
        when it has the samples the passthrough rule needs, or when its worker was not kept
        from running (it then has little work, and a new window would sample as little).
        A profile starved by the first candidate (on two cores, a candidate busy on both)
        would otherwise leave every later candidate of the session without passthrough
        evidence: its main thread waited for a CPU longer than it ran."""
        profile = self.reference_stacks
        if profile is None or not profile.samples:
            return False
        if profile.samples >= PASSTHROUGH_MIN_SAMPLES:
            return True
        if self.reference_window is None:
            return False
        running, waiting = self.reference_window
        return waiting <= running

    def _reference_schedstat(self) -> tuple[float, float] | None:
        sampled = self.samplers.get("reference")
        if sampled is None or sampled[1].tree is None:
            return None
        return sampled[1].tree.main_schedstat_s()

    def finish(self) -> dict[str, Any]:
        """Stop sampling; the report's ``op_audit.native`` section."""
        self.running = False
        for sampler, worker in self.samplers.values():
            _freeze_with(sampler, worker, False)
        profiles = {role: sampler.collect() for role, (sampler, _) in self.samplers.items()}
        if self.unsampled:
            profiles["candidate"] = NativeProfile(available=False, reason=self.unsampled)
        if self.reference_stacks is not None:
            profiles["reference"] = self.reference_stacks
        self.reference_stacks = profiles.get("reference")
        self.candidate_stacks = profiles.get("candidate")
        section = {role: _summary(profile) for role, profile in profiles.items()}
        reference, candidate = profiles.get("reference"), profiles.get("candidate")
        self.passthrough = None
        if reference is not None and candidate is not None:
            # A library routine first; else the reference's dominant kernel (any op: forged
            # op records that name none of the reference's ops make it suspect, below).
            self.passthrough = passthrough_evidence(reference, candidate)
            self.kernel_level = self.passthrough is None
            if self.kernel_level:
                self.passthrough = kernel_passthrough_evidence(reference, candidate)
        return section

    def findings(
        self,
        candidate_ops: dict[str, int],
        reference_ops: dict[str, int],
        custom_kernels: dict[str, int] | None = None,
    ) -> list[Finding]:
        """A library kernel passthrough seen from outside is ``suspect`` when the in-process op
        audit saw no op that runs such a kernel (it was blinded, or the work ran where the
        profiler does not look); where it did see one (a GEMM or convolution family, or one of
        the reference's own heavy ops, such as ``aten::gelu`` for oneDNN's eltwise kernel), its
        own rule (passthrough, which ``--allow-torch`` allows, or rewrite) stands and the
        stacks are reported as ``info``."""
        if not self.passthrough:
            return []
        families = set(kernel_families(Counter(candidate_ops))) & set(KERNEL_FAMILIES.values())
        seen = bool(families or set(candidate_ops) & set(reference_ops))
        if self.kernel_level:
            # Any op's kernel: only the reference's own ops run it, and a record of custom
            # kernels contradicts stacks that show (almost) no code of the candidate's own
            # (forged op records: HACKS row 35).
            seen = bool(set(candidate_ops) & set(reference_ops)) and not custom_kernels
        return [
            Finding(
                check=FindingCheck.NATIVE_STACKS,
                severity=Severity.INFO if seen else Severity.SUSPECT,
                message=f"stacks sampled from outside the processes: {self.passthrough}"
                + (
                    ""
                    if seen
                    else "; the op audit inside the candidate saw no op that runs this kernel"
                ),
            )
        ]


def _start_frozen_with(samplers: Iterable[tuple[StackSampler, WorkerProcess]]) -> None:
    """Start each sampler on its worker, let it attach, then have it frozen with the worker.

    Frozen with the worker: attaching to its stopped threads between requests would charge
    them kernel time, which the freezer reads as work done while frozen (an honest softmax
    was accused so), and a stopped process has no stacks worth sampling. But py-spy cannot
    attach to a stopped process at all ("Failed to suspend process"), so a sampler started
    on a frozen worker and frozen with it could attach only during the worker's requests: a
    softmax's checked calls, a few milliseconds each, ended before it had, under load (no
    samples, "py-spy exited with -2"), and attack 35c's timed stacks had nothing to be
    compared with. So the idle workers are resumed while their samplers attach (0.17 s on
    the quiet 2-core machine, at most ``READY_TIMEOUT_S``), then frozen again with them.
    The freezer checks each worker stayed frozen until then, as before any request."""
    samplers = list(samplers)
    resumed = []
    for _, worker in samplers:
        freezer = getattr(worker, "freezer", None)
        if freezer is not None and freezer.frozen:
            freezer.thaw()
            resumed.append(freezer)
    try:
        for sampler, worker in samplers:
            assert worker.tree is not None
            sampler.start(worker.tree.server())
        for sampler, _ in samplers:
            sampler.wait_ready()
    finally:
        for sampler, worker in samplers:
            _freeze_with(sampler, worker, True)
        for freezer in resumed:
            freezer.freeze()


def _freeze_with(sampler: StackSampler, worker: WorkerProcess, frozen: bool) -> None:
    """Have the worker's freezer stop (or no longer stop) the sampler's process group."""
    freezer = getattr(worker, "freezer", None)
    group = getattr(sampler, "process_group", None)
    if freezer is None or group is None:
        return
    if frozen:
        freezer.watch(group)
    else:
        freezer.unwatch(group)


def _summary(profile: NativeProfile) -> dict[str, Any]:
    data = asdict(profile)
    for key in ("libraries", "functions", "heavy_functions", "custom_libraries", "call_functions"):
        if isinstance(data.get(key), dict):
            data[key] = dict(sorted(data[key].items(), key=lambda kv: -kv[1])[:REPORTED])
    return data


#: Samples per second while the timing rounds run: the matrix's rate. Most of a timed window
#: is the harness's (cache flushes, input changes, round trips), so fewer left too few samples
#: inside the calls; every sample pauses the sampled worker, and both workers are sampled, so
#: the pauses fall on both sides of the comparison (the samples missed while a worker was
#: frozen are taken before its next request, see ``Freezer.drain_companions``).
TIMED_RATE_HZ = 100


class TimedStacks:
    """Samples both workers' native stacks from outside during the default shape's timing
    rounds (HACKS row 35).

    Checked calls cannot be made indistinguishable from timed ones inside the candidate's
    process (its call stack, its thread count, the cadence of its calls all differ), and what
    that process reports (op records, replies) can be rewritten in flight. So the evidence
    that the timed code is the candidate's own comes from the timed calls themselves, gathered
    outside: the sampler runs for the whole timed window (a candidate that sees it, a process
    in its pid namespace, sees it in the checked cells of that shape too), and its profile is
    compared with the reference's and with the candidate's own checked calls."""

    def __init__(
        self, audit: NativeAudit, reference: WorkerProcess | None, candidate: WorkerProcess | None
    ) -> None:
        self.audit = audit
        self.samplers: dict[str, tuple[StackSampler, WorkerProcess]] = {}
        for role, worker in (("reference", reference), ("candidate", candidate)):
            if worker is not None and worker.tree is not None and worker.alive:
                self.samplers[role] = (StackSampler(rate_hz=TIMED_RATE_HZ), worker)
        self.started = False
        self.profiles: dict[str, NativeProfile] = {}

    @classmethod
    def after(
        cls,
        audit: NativeAudit | None,
        reference: WorkerProcess | None,
        candidate: WorkerProcess | None,
    ) -> TimedStacks | None:
        """Sampling for the timing phase that follows ``audit``'s matrix, or None where no
        timed profile could be passthrough evidence: no audit, or a candidate not sampled in
        the matrix (a session's reference profile named no library routine). A reference
        whose matrix profile names no dominant kernel is sampled anyway: that profile also
        holds the float64 oracle's kernels, and on a fast op (softmax) few samples of the
        reference's own; its timed calls, sampled here, name the kernel (attack 35c passed
        its softmax through unseen when they were not)."""
        if audit is None or audit.unsampled:
            return None
        return cls(audit, reference, candidate)

    def reference_profile(self) -> NativeProfile | None:
        """The reference's profile the timed calls are compared with: its own timed calls
        (the op at the timed shape, without the oracle) when they carry kernel evidence,
        else the matrix's."""
        timed = self.profiles.get("reference")
        if timed is not None and dominant_kernel(timed) is not None:
            return timed
        return self.audit.reference_stacks

    def start(self) -> None:
        """Begin sampling (once: the default shape's rounds, not later shapes')."""
        if self.started:
            return
        self.started = True
        _start_frozen_with(self.samplers.values())

    def interrupt(self) -> None:
        for sampler, worker in self.samplers.values():
            _freeze_with(sampler, worker, False)  # resumed, so that it can take its SIGINT
            sampler.interrupt()

    def finish(self) -> dict[str, Any]:
        """Stop sampling; the report's ``op_audit.native["timed"]`` section."""
        for sampler, worker in self.samplers.values():
            _freeze_with(sampler, worker, False)
        if self.started and not self.profiles:
            self.profiles = {
                role: sampler.collect() for role, (sampler, _) in self.samplers.items()
            }
        return {role: _summary(profile) for role, profile in self.profiles.items()}

    def findings(
        self,
        candidate_ops: dict[str, int],
        reference_ops: dict[str, int],
        custom_kernels: dict[str, int] | None = None,
    ) -> list[Finding]:
        """``suspect`` when the timed calls went mostly to the reference's library routine
        and the checked calls, sampled at the same shape, did not (it behaves differently
        while timed), or when the checked calls' profile cannot say and the in-process op
        audit saw no op that runs such a kernel; ``info`` otherwise (the matrix's own rule
        then decides, as for a partial replacement that keeps torch's GEMM)."""
        timed = self.profiles.get("candidate")
        reference = self.reference_profile()
        if timed is None or reference is None:
            return []
        found = timed_passthrough(reference, self.audit.candidate_stacks, timed)
        if found is None:
            return []
        if found.only_while_timed:
            severity = Severity.SUSPECT
            why = (
                f"; in its checked calls at the same shape only {found.checked_share:.0%} "
                "went there: it computes differently while it is timed"
            )
        elif found.checked_share is None:
            families = set(kernel_families(Counter(candidate_ops))) & set(KERNEL_FAMILIES.values())
            seen = families or set(candidate_ops) & set(reference_ops)
            severity = Severity.INFO if seen else Severity.SUSPECT
            why = (
                ""
                if seen
                else "; its checked calls were not sampled well enough to "
                "compare, and the op audit inside the candidate saw no op that runs this "
                "kernel"
            )
        else:
            severity, why = (
                Severity.INFO,
                (f"; its checked calls did the same ({found.checked_share:.0%})"),
            )
        return [
            Finding(
                check=FindingCheck.NATIVE_STACKS,
                severity=severity,
                message=f"stacks of the timed calls, sampled from outside the processes: "
                f"{found.message}{why}",
                evidence={
                    "routine": found.routine,
                    "timed_share": found.timed_share,
                    "checked_share": found.checked_share,
                },
                variant="timing:default",
            )
        ]
