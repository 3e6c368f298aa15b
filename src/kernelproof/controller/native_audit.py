"""The out-of-process op audit: py-spy samples both workers' native stacks during the matrix.

The in-process op audit runs inside the candidate's process and can be blinded or fed other
op names; the stacks the kernel shows py-spy from outside cannot. Both workers are sampled while
the correctness matrix runs: the candidate's profile says which library functions its time
went to, and a candidate that spends most of it in the very library routine the reference
uses, with no code of its own, passed the work through (``native-stacks``, ``suspect``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

from kernelproof.checks.native_stacks import (PASSTHROUGH_MIN_SAMPLES, NativeProfile,
                                               StackSampler, passthrough_evidence,
                                               passthrough_targets)
from kernelproof.checks.op_policy import KERNEL_FAMILIES, kernel_families
from kernelproof.schema import Finding, FindingCheck, Severity
from kernelproof.workers.process import WorkerProcess

#: Entries of each profile kept in the report.
REPORTED = 8


class NativeAudit:
    """Samplers on both workers between ``start`` and ``finish``."""

    def __init__(self, reference: WorkerProcess | None, candidate: WorkerProcess | None,
                 reference_stacks: NativeProfile | None = None) -> None:
        """``reference_stacks``: the reference's profile sampled in an earlier verification
        of the same task (a session's memo); the reference worker is then not sampled, as
        its answers are replayed and it runs nothing."""
        self.passthrough: str | None = None
        self.reference_stacks = reference_stacks
        self.samplers: dict[str, tuple[StackSampler, WorkerProcess]] = {}
        #: Why the candidate is not sampled ('' when it is).
        self.unsampled = ""
        if reference_stacks is not None and not passthrough_targets(reference_stacks):
            # Sampling costs the candidate a pause per sample and the machine a py-spy start
            # (about 0.6 s a verification here); the rule below could not use what it saw.
            self.unsampled = ("not sampled: the reference's profile shows no library routine "
                              "(GEMM, convolution, oneDNN) a candidate could pass its work "
                              "through to" if reference_stacks.available else
                              "not sampled: the reference's profile is unavailable "
                              f"({reference_stacks.reason})")
        for role, worker in (("reference", reference), ("candidate", candidate)):
            if role == "reference" and reference_stacks is not None:
                continue
            if role == "candidate" and self.unsampled:
                continue
            if worker is not None and worker.tree is not None and worker.alive:
                self.samplers[role] = (StackSampler(), worker)

    running: bool = False
    reference_window: tuple[float, float] | None = None
    """(seconds on a CPU, seconds waiting for one) of the reference's main thread during the
    sampled window, when it was sampled."""
    _schedstat_started: tuple[float, float] | None = None

    def start(self) -> None:
        for sampler, worker in self.samplers.values():
            assert worker.tree is not None
            sampler.start(worker.tree.server())
            # Frozen with the candidate: a sampler attaching to stopped threads would wake
            # them in the kernel, and a stopped process has no stacks worth sampling.
            _freeze_with(sampler, worker, True)
        self._schedstat_started = self._reference_schedstat()
        self.running = True

    def interrupt(self) -> None:
        """End the sampled window; the samplers write their profiles until :meth:`finish`."""
        for sampler, worker in self.samplers.values():
            _freeze_with(sampler, worker, False)  # resumed, so that it can take its SIGINT
            sampler.interrupt()
        ended = self._reference_schedstat()
        if ended is not None and self._schedstat_started is not None:
            self.reference_window = (ended[0] - self._schedstat_started[0],
                                     ended[1] - self._schedstat_started[1])

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
        section = {role: _summary(profile) for role, profile in profiles.items()}
        reference, candidate = profiles.get("reference"), profiles.get("candidate")
        self.passthrough = None
        if reference is not None and candidate is not None:
            self.passthrough = passthrough_evidence(reference, candidate)
        return section

    def findings(self, candidate_ops: dict[str, int],
                 reference_ops: dict[str, int]) -> list[Finding]:
        """A library kernel passthrough seen from outside is ``suspect`` when the in-process op
        audit saw no op that runs such a kernel (it was blinded, or the work ran where the
        profiler does not look); where it did see one (a GEMM or convolution family, or one of
        the reference's own heavy ops, such as ``aten::gelu`` for oneDNN's eltwise kernel), its
        own rule (passthrough, which ``--allow-torch`` allows, or rewrite) stands and the
        stacks are reported as ``info``."""
        if not self.passthrough:
            return []
        families = set(kernel_families(Counter(candidate_ops))) & set(KERNEL_FAMILIES.values())
        seen = families or set(candidate_ops) & set(reference_ops)
        return [Finding(
            check=FindingCheck.NATIVE_STACKS,
            severity=Severity.INFO if seen else Severity.SUSPECT,
            message=f"stacks sampled from outside the processes: {self.passthrough}"
                    + ("" if seen else "; the op audit inside the candidate saw no op that "
                                       "runs this kernel"),
        )]


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
    for key in ("libraries", "functions", "heavy_functions", "custom_libraries"):
        if isinstance(data.get(key), dict):
            data[key] = dict(sorted(data[key].items(), key=lambda kv: -kv[1])[:REPORTED])
    return data
