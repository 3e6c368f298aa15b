"""One verification, end to end: task -> workers -> results -> report.

The controller (this module) never imports candidate code. It reads the candidate as text,
starts the two workers, drives the correctness matrix, compares outputs itself, and turns
everything into a :class:`~kernelproof.schema.Report`.
"""

from __future__ import annotations

import json
import random
import secrets
import shutil
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from kernelproof.checks.assumptions import infer_assumptions
from kernelproof.checks.degenerate import DefaultCall, degenerate_findings
from kernelproof.checks.observations import findings_from_observations, merge_findings
from kernelproof.checks.op_policy import audit_ops
from kernelproof.checks.static_scan import StaticScan, scan_source
from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import Settings, SettingsOverrides, resolve_settings
from kernelproof.controller.confinement import sandbox_section
from kernelproof.controller.envelope import build_envelope
from kernelproof.controller.environment import collect_environment
from kernelproof.controller.freeze_evidence import frozen_findings
from kernelproof.controller.matrix import (
    CandidateBroken,
    MatrixResult,
    MatrixRunner,
    TaskFailure,
    broken_finding,
)
from kernelproof.controller.native_audit import NativeAudit, TimedStacks
from kernelproof.controller.repro import Shrinker
from kernelproof.controller.sizing import (
    FITTED_SHARE,
    Sizing,
    fit_around,
    fit_default_shape,
    largest_fitting,
    past_24_bits,
    past_32_bits,
    rows_past_31_bits,
    within_budget,
)
from kernelproof.controller.spread_measurement import spread_for
from kernelproof.controller.stage_clock import StageClock
from kernelproof.controller.summary import (
    combine_noise_findings,
    correctness_findings,
    summarize,
)
from kernelproof.controller.task_faults import explain_task_failure
from kernelproof.controller.timing_session import TimingSession
from kernelproof.errors import CandidateFormatError, KernelproofError, TaskError, UsageError
from kernelproof.proof.probe import matrix_thread_count
from kernelproof.redaction import redact_data, secret_values
from kernelproof.schema import (
    Artifact,
    Assumption,
    CodeFacts,
    Correctness,
    CorrectnessTest,
    Finding,
    FindingCheck,
    InputVariant,
    OpAudit,
    Pipeline,
    Report,
    Repro,
    Roofline,
    Sandbox,
    Severity,
    Stage,
    StageRecord,
    TestOutcome,
    Timing,
    Verdict,
    decide_verdict,
    decisive_stage,
)
from kernelproof.schema.binding import report_fingerprint
from kernelproof.schema.envelope import Envelope
from kernelproof.schema.pipeline import PipelineStop
from kernelproof.tasks.candidate_knobs import candidate_knob_findings, imported_source
from kernelproof.tasks.formats import load_task
from kernelproof.tasks.loaded import LoadedTask
from kernelproof.tasks.saved_inputs import load_arguments
from kernelproof.tasks.variants import (
    ShapeGroup,
    draw_seeds,
    largest_verified,
    matrix_order,
    plan_matrix,
    refitted,
)
from kernelproof.timing.process_spread import FALLBACK_SPREAD, ProcessSpread, widen
from kernelproof.workers.pair import WorkerPair, prepare_request, worker_threads
from kernelproof.workers.reference_memo import TaskMemo, TaskMemos

#: Timing phases tried before the speed is reported unmeasured: one rerun with fresh workers
#: after a worker died (a crash of the machine's own making must not cost the measurement; a
#: second death in a row is not chance).
TIMING_ATTEMPTS = 2

#: Intra-op threads of the controller process while it verifies (see _controller_threads).
CONTROLLER_THREADS = 1

#: Verdicts that nothing a later stage finds can change (bar the task's own fault): a
#: deadline that stops the stages after one of them leaves it standing.
DECIDED = frozenset({Verdict.INCORRECT, Verdict.ERROR})


def verify(
    reference: str | Path,
    candidate: str | Path,
    *,
    profile: str = "default",
    memos: TaskMemos | None = None,
    deadline_s: float | None = None,
    **overrides: Unpack[SettingsOverrides],
) -> Report:
    """Verify ``candidate`` against ``reference`` and return the report. Never raises for a
    bad candidate or task: those become verdicts (``broken``, ``error``) with their reason.

    ``memos``: a session's task memos (:class:`kernelproof.Session` passes its own). The
    reference's answers are then replayed from earlier verifications of the same task,
    settings and seeds, and its worker is kept warm; the report is the same.

    ``deadline_s``: seconds this verification may take (a reward batch's deadline). No
    candidate request outlives it, and no stage starts after it; a verdict not decided by
    then is ``error`` with a ``deadline`` finding (see :class:`_Run`)."""
    started = time.monotonic()
    reference, candidate = Path(reference), Path(candidate)
    scratch = Path(tempfile.mkdtemp(prefix="kernelproof-task-"))
    try:
        try:
            loaded = load_task(reference, candidate, scratch)
        except CandidateFormatError as exc:
            settings = _settings_or_none(profile, overrides)
            return _early_report(
                Verdict.BROKEN,
                FindingCheck.CANDIDATE_FILE,
                str(exc),
                reference,
                candidate,
                started,
                settings,
            )
        except TaskError as exc:
            return _early_report(
                Verdict.ERROR, FindingCheck.TASK, str(exc), reference, candidate, started
            )
        return verify_loaded(
            loaded,
            profile=profile,
            started=started,
            memos=memos,
            deadline_s=deadline_s,
            **overrides,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def verify_loaded(
    loaded: LoadedTask,
    *,
    profile: str = "default",
    started: float | None = None,
    memos: TaskMemos | None = None,
    deadline_s: float | None = None,
    **overrides: Unpack[SettingsOverrides],
) -> Report:
    """Verify a task and candidate already loaded (or generated, as ``kernelproof e2e``
    generates them) and return the report; bad settings are an ``error`` report. ``memos``
    and ``deadline_s``: see :func:`verify`."""
    started = time.monotonic() if started is None else started
    try:
        settings = resolve_settings(
            profile=profile, task_policy=loaded.task.policy, overrides=overrides
        )
        saved = load_arguments(settings.inputs_file) if settings.inputs_file else None
    except UsageError as exc:
        return _early_report(
            Verdict.ERROR,
            FindingCheck.SETTINGS,
            str(exc),
            loaded.task.path,
            loaded.candidate_file,
            started,
        )
    # A replay of saved arguments is never memoised: the memo keys requests, not the bytes
    # of a file that may change under the same path.
    memo = (
        memos.memo_for(loaded.task, loaded.readable_paths, settings)
        if memos is not None and saved is None
        else None
    )
    deadline = started + deadline_s if deadline_s is not None else None
    with _controller_threads():
        return _Run(
            loaded=loaded, settings=settings, saved=saved, memo=memo, deadline=deadline
        ).execute(started)


def _settings_or_none(profile: str, overrides: Mapping[str, Any]) -> Settings | None:
    try:
        return resolve_settings(profile=profile, overrides=overrides)
    except UsageError:
        return None


_THREADS_LOCK = threading.Lock()
_THREADS_STATE = {"active": 0, "previous": 0}


@contextmanager
def _controller_threads() -> Iterator[None]:
    """The controller's own tensor work (comparisons) runs on one thread: its tensors are
    small, and OpenMP barriers on a shared machine slow such ops by 10-50x (measured here).
    Counted, so that concurrent verifications in one process restore the caller's setting
    only when the last one ends."""
    import torch

    with _THREADS_LOCK:
        if _THREADS_STATE["active"] == 0:
            _THREADS_STATE["previous"] = torch.get_num_threads()
            torch.set_num_threads(CONTROLLER_THREADS)
        _THREADS_STATE["active"] += 1
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS_STATE["active"] -= 1
            if _THREADS_STATE["active"] == 0:
                torch.set_num_threads(_THREADS_STATE["previous"])


@dataclass(frozen=True)
class _MatrixPlan:
    """What the matrix will run: the fitted default shape, the groups within this machine's
    budget and those over it, and how outputs are judged."""

    sizing: Sizing
    runnable: list[ShapeGroup]
    over_budget: list[ShapeGroup]
    policy: TolerancePolicy


class _Run:
    """The state of one verification while it runs."""

    def __init__(
        self,
        loaded: LoadedTask,
        settings: Settings,
        saved: list[Any] | None = None,
        memo: TaskMemo | None = None,
        deadline: float | None = None,
    ) -> None:
        self.stages = StageClock()
        self.deadline = deadline
        """A ``time.monotonic()`` instant after which no stage starts and no candidate
        request runs (see :func:`verify`)."""
        self.stopped: PipelineStop | None = None
        """Why the stages stopped early: ``fail-fast`` or ``deadline`` (the report's
        ``pipeline.stopped``)."""
        self.loaded = loaded
        self.saved = saved
        """The arguments of ``--inputs``, when given (a replay of a guard incident)."""
        self.memo = memo
        self.task = loaded.task
        self.candidate = loaded.candidate_file
        self.candidate_text = loaded.candidate_text
        self.settings = settings
        self.base_seed = (
            settings.base_seed if settings.base_seed is not None else (secrets.randbits(31))
        )
        self.init_seed, drawn = draw_seeds(self.base_seed, settings.seeds)
        self.seeds = list(settings.input_seeds) if settings.input_seeds else drawn
        self.findings: list[Finding] = []
        self.sizing: Sizing | None = None
        self.correctness: Correctness | None = None
        self.op_audit: OpAudit | None = None
        self.timing: Timing | None = None
        self.roofline: Roofline | None = None
        self.assumptions: list[Assumption] = []
        self.repros: list[Repro] = []
        self.sandbox: Sandbox | None = None
        self.envelope: Envelope | None = None
        self.native: dict[str, Any] = {}
        self.native_audit: NativeAudit | None = None
        """The matrix's out-of-process audit, whose profiles the timed rounds' are compared with."""
        self.own_errors: dict[int, Any] = {}
        self.bounds: dict[str, dict[int, tuple[float, float]]] = {}
        """The reference's own error per output, learned in the matrix (timed outputs are
        compared with the reference's timed outputs at this tolerance)."""
        self.loaded_at = time.monotonic()
        self.static: StaticScan | None = None
        self.findings += [
            Finding(check=FindingCheck.TASK_FORMAT, severity=Severity.INFO, message=note)
            for note in loaded.notes
        ]
        self.findings += [
            Finding(check=FindingCheck.TASK_FORMAT, severity=Severity.WARN, message=note)
            for note in loaded.unhonoured
        ]

    def execute(self, started: float) -> Report:
        """The pipeline of DESIGN.md, one named step each: load (done), static scan, build,
        plan, the correctness matrix with its probes and native audit, assumptions and
        repros, the op audit, timing; then the verdict and the report."""
        self.stages.ran(Stage.LOAD, self.loaded_at - started, Verdict.VERIFIED)
        self._scan()
        with WorkerPair(
            task=self.task,
            candidate_path=self.loaded.candidate_path,
            settings=self.settings,
            readable_paths=self.loaded.readable_paths,
            memo=self.memo,
            deadline=self.deadline,
        ) as pair:
            try:
                self._verify(pair)
            except TaskFailure as exc:
                self.findings.append(self._task_failure_finding(str(exc)))
            except CandidateBroken as exc:
                if exc.finding.check is FindingCheck.CONSTRUCTOR:
                    self.stages.relabel(Stage.BUILD)  # construction is part of the build
                self.findings.append(self._at_deadline(exc.finding))
            except KernelproofError:
                raise
            except Exception as exc:  # noqa: BLE001 - our own bug must not lose the results
                self.findings.append(self._internal_error_finding(exc))
            if pair.candidate is not None:
                pair.candidate.thaw()  # checks the last frozen interval too
            self.findings += frozen_findings(pair.freeze_ledgers)
            self.stages.end(decide_verdict(self.findings))
            build_s = pair.build_s
        if self.stopped == "deadline" and decide_verdict(self.findings) not in DECIDED:
            self.findings.append(self._deadline_finding())
        return self._report(started, build_s)

    # -- stopping early ----------------------------------------------------------------------

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _stop_after(self, result: MatrixResult) -> bool:
        """Asked by the matrix after each cell: stop at the deadline, or (``fail_fast``) at
        the first silently wrong cell, which nothing later can outrank but the task's fault."""
        if self.stages.current is Stage.FIRST_INPUT:
            self.stages.enter(Stage.MATRIX, self._verdict_with(result))
        if self._past_deadline():
            self.stopped = "deadline"
        elif self.settings.fail_fast and any(t.outcome is TestOutcome.FAILED for t in result.tests):
            self.stopped = "fail-fast"
        return self.stopped is not None

    def _verdict_with(self, result: MatrixResult) -> Verdict:
        return decide_verdict(self.findings + result.findings + correctness_findings(result.tests))

    def _at_deadline(self, finding: Finding) -> Finding:
        """A candidate request killed by the caller's deadline is no fault of the
        candidate's: its timeout becomes the deadline's stop, not a ``broken`` verdict."""
        if (
            self.deadline is not None
            and self._past_deadline()
            and (finding.evidence.get("cause") == "timeout")
        ):
            self.stopped = "deadline"
            return Finding(
                check=FindingCheck.DEADLINE,
                severity=Severity.INFO,
                message=f"a candidate request was cut at the deadline: {finding.message}"[:1000],
            )
        return finding

    def _deadline_finding(self) -> Finding:
        return Finding(
            check=FindingCheck.DEADLINE,
            severity=Severity.FAIL,
            forces=Verdict.ERROR,
            message=f"not verified within the caller's deadline: stopped during the "
            f"{self.stages.last_stage_value()} stage with no decisive failure found so "
            "far. The deadline, not the candidate, is at fault: give the batch more time "
            "(deadline_s) or fewer candidates per scorer",
            evidence={"stages": [r.stage.value for r in self.stages.records]},
        )

    def _scan(self) -> None:
        """Step 2: the candidate's source, statically (evidence, never a verdict alone)."""
        scanned_at = time.monotonic()
        self.static = scan_source(self.candidate_text, str(self.candidate))
        self.findings += self.static.findings
        self.stages.ran(
            Stage.STATIC_SCAN, time.monotonic() - scanned_at, decide_verdict(self.findings)
        )

    def _verify(self, pair: WorkerPair) -> None:
        self._build(pair)
        plan = self._plan(pair)
        result = self._matrix(pair, plan)
        self._assumptions_and_repros(pair, plan, result)
        self._op_audit(result)
        verdict = decide_verdict(self.findings)
        if (
            self.settings.timing
            and self.stopped is None
            and verdict in (Verdict.VERIFIED, Verdict.SUSPECT)
        ):
            if self.settings.fail_fast and verdict is Verdict.SUSPECT:
                self._skip_timing_of_suspect()
                return
            if self._past_deadline():
                self.stopped = "deadline"
                return
            self.stages.enter(Stage.TIMING, decide_verdict(self.findings))
            self._time(pair, plan.runnable, plan.policy)

    def _skip_timing_of_suspect(self) -> None:
        """Fail-fast: a candidate already ``suspect`` is not timed. Timing adds findings and
        never withdraws one, so it could only keep the verdict ``suspect`` or make it
        ``incorrect`` (timed outputs that differ), and neither earns a reward; it was most of
        a suspect candidate's time (an RL batch's hacks took 9.6 s median, 3 s of budget and
        the warm-up of both workers)."""
        self.stopped = "fail-fast"
        self.findings.append(
            Finding(
                check=FindingCheck.STOPPED_EARLY,
                severity=Severity.INFO,
                message="fail-fast: the verdict was already suspect after the op audit, so "
                "timing did not run; timing can only keep a verdict suspect or make it "
                "incorrect. Rerun without fail_fast for the speedup and the timed checks",
            )
        )

    def _build(self, pair: WorkerPair) -> None:
        """Step 3: both workers started, the candidate imported in its sandbox."""
        self.stages.enter(Stage.BUILD, decide_verdict(self.findings))
        pair.start_reference()
        built = pair.start_candidate()
        self.sandbox, gaps = sandbox_section(pair.candidate, self.settings)
        self.findings += gaps
        if built.reply is not None:  # evidence from import time: patches, file reads
            self.findings += findings_from_observations(built.reply.observations, variant="build")
        if not built.ok:
            self._blame_task_if_it_cannot_load(pair)
            raise CandidateBroken(
                broken_finding(
                    FindingCheck.BUILD,
                    f"the candidate does not build or import ({self.candidate})",
                    built,
                )
            )
        self.findings += candidate_knob_findings(self.task, imported_source(self.loaded))

    def _plan(self, pair: WorkerPair) -> _MatrixPlan:
        """Step 4's plan: the default shape fitted to the machine, the shape groups, which of
        them fit the budget, and the tolerance policy."""
        if self.settings.default_knobs:
            unknown = set(self.settings.default_knobs) - set(self.task.knobs)
            if unknown:
                raise TaskFailure(
                    f"--knobs names {', '.join(sorted(unknown))}, which the task "
                    f"does not have; its knobs are {', '.join(self.task.knobs)}"
                )
            sizing = Sizing({**self.task.default_knobs, **self.settings.default_knobs})
        else:
            sizing = fit_default_shape(pair, self.task.default_knobs, self.settings)
        self.sizing = sizing
        if sizing.warning:
            self.findings.append(
                Finding(check=FindingCheck.SIZING, severity=Severity.INFO, message=sizing.warning)
            )
        if sizing.tiny_output:
            self.findings.append(
                Finding(
                    check=FindingCheck.SIZING, severity=Severity.WARN, message=sizing.tiny_output
                )
            )
        stress = (
            {
                name: size
                for name in sizing.knobs
                if (size := largest_fitting(pair, sizing.knobs, name, self.settings))
            }
            if self.settings.stress_shapes and self.settings.shape_variants
            else None
        )
        groups = plan_matrix(
            sizing.knobs,
            self.task.shapes,
            self.seeds,
            self.settings,
            task_values=self.task.value_variants,
            stress_sizes=stress,
            past_32_bits=self._past_32_bits(pair, sizing.knobs),
            past_24_bits=self._past_24_bits(pair, sizing.knobs),
        )
        runnable, over_budget = self._within_budget(pair, groups)
        policy = TolerancePolicy.from_settings(self.settings)
        return _MatrixPlan(sizing, runnable, over_budget, policy)

    def _matrix(self, pair: WorkerPair, plan: _MatrixPlan) -> MatrixResult:
        """Steps 4 and 5: the correctness matrix, each call through the integrity probes; the
        native audit samples both workers' stacks from outside while the default shape runs
        (its whole lifecycle is here)."""
        sizing, runnable, over_budget, policy = (
            plan.sizing,
            plan.runnable,
            plan.over_budget,
            plan.policy,
        )
        self.correctness = Correctness(
            seeds=self.seeds,
            base_seed=self.base_seed,
            default_knobs=sizing.knobs,
            task_knobs=self.task.default_knobs,
            scaled_down=sizing.scaled_down,
            tolerance=policy.describe(),
            threads=matrix_thread_count("cpu", self.settings.threads)
            if self.settings.device == "cpu"
            else None,
        )
        runner = MatrixRunner(
            pair=pair,
            policy=policy,
            init_seed=self.init_seed,
            saved_arguments=self.saved,
            stop_after=self._stop_after,
            call_timeout_s=self.settings.call_timeout_s,
        )
        native = (
            NativeAudit(
                pair.reference,
                pair.candidate,
                reference_stacks=self.memo.reference_stacks if self.memo else None,
            )
            if self.settings.native_audit
            else None
        )
        order = matrix_order(runnable, self.settings.fail_fast)
        self.stages.enter(Stage.FIRST_INPUT, decide_verdict(self.findings))
        try:
            if order.before:
                runner.run(order.before)
            if runner.stopped:
                native = None  # fail-fast decided before the sampled cells: no sampler to start
            # The stacks are sampled while the default shape's cells run (the calls the op
            # audit compares): sampling pauses the workers, so not for the whole matrix.
            if native is not None:
                native.start()
            runner.run([] if runner.stopped else order.sampled)
            if native is not None:
                native.interrupt()  # py-spy writes its profiles while the other shapes run
            result = runner.run([] if runner.stopped else order.after)
            if native is not None:
                self.native = native.finish()
                stacks = native.reference_stacks
                if (
                    self.memo is not None
                    and pair.contained
                    and stacks is not None
                    and native.reference_profile_reusable()
                ):
                    self.memo.remember_stacks(stacks)
        finally:
            if native is not None and native.running:
                self.native = native.finish()
            self.correctness.tests.extend(runner.result.tests)
            self.correctness.module_mode = runner.result.module_mode
            self.findings += runner.result.findings
            self.own_errors = runner.own_errors
            self.bounds = runner.bounds
        for group in over_budget:
            for variant in group.variants:
                self.correctness.tests.append(_skipped(variant, "over this machine's budget"))
        if self.stopped == "fail-fast":
            planned = sum(len(g.variants) for g in runnable)
            run = len(runner.result.tests)
            self.findings.append(
                Finding(
                    check=FindingCheck.STOPPED_EARLY,
                    severity=Severity.INFO,
                    message=f"fail-fast: stopped at the first silently wrong cell; {run} of "
                    f"{planned} planned cells ran, the rest (and shrinking and timing) did "
                    "not. The verdict is the full verification's; rerun without fail_fast "
                    "for every failing cell and a shrunk repro",
                    evidence={"cells_run": run, "cells_planned": planned},
                )
            )
        self.correctness.largest_verified = largest_verified(self.correctness.tests, sizing.knobs)
        self.envelope = self._envelope(runner.result.signatures, sizing.knobs)
        self.findings += correctness_findings(self.correctness.tests)
        self.findings += self._degenerate_findings(result.default_calls, policy)
        self.findings += _weight_findings(result.weights)
        self.native_audit = native
        return result

    def _assumptions_and_repros(
        self, pair: WorkerPair, plan: _MatrixPlan, result: MatrixResult
    ) -> None:
        """Step 8's evidence: the assumptions the matrix's failures imply, each shrunk to its
        smallest failing input and a repro script."""
        sizing, policy = plan.sizing, plan.policy
        assert self.correctness is not None
        self.assumptions = infer_assumptions(self.correctness.tests, sizing.knobs, self.findings)
        if (
            self.settings.shrink
            and self.assumptions
            and self.saved is None
            and self.stopped is None
        ):
            shrinker = Shrinker(
                pair=pair,
                loaded=self.loaded,
                policy=policy,
                init_seed=self.init_seed,
                default_knobs=sizing.knobs,
                settings=self.settings,
                base_seed=self.base_seed,
            )
            self.repros = shrinker.repros(self.correctness.tests, self.assumptions)

    def _op_audit(self, result: MatrixResult) -> None:
        """Step 5's op audit: the ops the candidate ran against the reference's, from its op
        records and the native stacks sampled from outside."""
        assert self.static is not None
        native = self.native_audit
        self.stages.enter(Stage.OP_AUDIT, decide_verdict(self.findings))
        audit = audit_ops(
            result.calls,
            declared_kernels=self.static.custom_kernels,
            allow_torch=self.settings.allow_torch,
            strict=self.settings.strict,
        )
        self.findings += audit.findings
        self.op_audit = audit.summary
        if native is not None and self.op_audit is not None:
            self.op_audit.native = self.native
            self.findings += native.findings(
                self.op_audit.candidate_ops,
                self.op_audit.reference_ops,
                self.op_audit.custom_kernels,
            )

    def _degenerate_findings(
        self, calls: list[DefaultCall], policy: TolerancePolicy
    ) -> list[Finding]:
        """The task's adequacy findings (mutants of the reference's default outputs through
        the comparator): once per session for the same seeds and tolerance, as they depend
        on the reference's answers alone, which the memo replays."""

        def compute() -> list[Finding]:
            return degenerate_findings(calls, policy, str(self.task.path))

        if self.memo is None:
            return compute()
        key = f"degenerate:{policy!r}:{[call.seed for call in calls]}"
        return [finding.model_copy(deep=True) for finding in self.memo.derived_value(key, compute)]

    def _envelope(self, signatures: dict[str, Any], knobs: dict[str, int]) -> Envelope | None:
        """The report's envelope; a fault in building it costs the envelope (and says so),
        never the verification."""
        assert self.correctness is not None
        try:
            return build_envelope(self.correctness.tests, signatures, knobs)
        except Exception as exc:  # noqa: BLE001 - everything else computed must survive
            self.findings.append(
                Finding(
                    check=FindingCheck.COVERAGE,
                    severity=Severity.INFO,
                    message=f"the envelope could not be built ({type(exc).__name__}: "
                    f"{str(exc)[:200]}); the report carries none, so kernelproof.guard "
                    "will refuse it. Please report this with the task",
                )
            )
            return None

    def _internal_error_finding(self, exc: Exception) -> Finding:
        """A failure of kernelproof's own code (a bug, never the candidate's verdict): the
        results gathered before it are kept, and the verdict is ``error``."""
        where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        return Finding(
            check=FindingCheck.INTERNAL_ERROR,
            severity=Severity.FAIL,
            forces=Verdict.ERROR,
            message=f"kernelproof failed in its own code during the "
            f"{self.stages.last_stage_value()} stage ({type(exc).__name__}: {exc})"[:600]
            + ". The results gathered before it are kept in this report; this is a bug in "
            "kernelproof, not a finding about the candidate: report it with this report",
            evidence={
                "exception": type(exc).__name__,
                "at": f"{Path(where.filename).name}:{where.lineno}" if where else None,
            },
        )

    def _task_failure_finding(self, failure: str) -> Finding:
        """The reference failed. At a shape kernelproof chose (scaled down to the budget),
        that is kernelproof's doing, never the task's fault."""
        if self.sizing is not None and self.sizing.scaled_down:
            chosen = " ".join(f"{k}={v}" for k, v in self.sizing.knobs.items())
            return Finding(
                check=FindingCheck.SIZING,
                severity=Severity.FAIL,
                forces=Verdict.ERROR,
                message=f"the reference fails at the shape kernelproof scaled it down to "
                f"({chosen}); its own shape is over the budget and was not run: "
                f"{failure}. Rerun with --knobs set to a shape it runs at, or with a "
                f"larger budget (max_call_bytes)",
                evidence={"chosen_knobs": self.sizing.knobs, "task_knobs": self.task.default_knobs},
            )
        explained = explain_task_failure(failure, self.settings.device)
        fix = ". Fix the reference and rerun" if explained == failure else ""
        return Finding(
            check=FindingCheck.TASK,
            severity=Severity.FAIL,
            forces=Verdict.ERROR,
            message=f"{self.task.path}: {explained}{fix}.",
        )

    def _blame_task_if_it_cannot_load(self, pair: WorkerPair) -> None:
        """A candidate that fails to import may be failing on the task's own files (GPU MODE
        submissions import ``task.py``): when the reference cannot be built either, the task
        is at fault (``error``), not the candidate (``broken``)."""
        sizing = fit_default_shape(pair, self.task.default_knobs, self.settings)
        response = pair.ask_reference(prepare_request(sizing.knobs, self.init_seed))
        if not response.ok:
            raise TaskFailure(
                f"the task's own files fail to load, so no candidate can: {response.failure}"
            )

    def _time(self, pair: WorkerPair, groups: list[ShapeGroup], policy: TolerancePolicy) -> None:
        """The timing phase and the speed-of-light analysis built on it. A phase that ends
        because a worker died is run once more with fresh workers; if that fails too, the
        speed is unmeasured (and a reward built on it is 0), never taken from what remains."""
        ceilings = _ceilings(self.settings)
        # Timing runs only after the matrix, which set self.correctness.
        tested = {
            t.variant.name
            for t in self.correctness.tests  # type: ignore[union-attr]  # ^
            if t.outcome is TestOutcome.PASSED
        }
        timed = [g for g in groups if g.is_default or (g.label in tested and not g.stress)]
        causes: list[str] = []
        # The timed inputs' seeds are drawn fresh, never from the base seed: a session reuses
        # one base seed across candidates (and a user may rerun with --seed), and a candidate
        # that stored its timed outputs in its build cache must not find the same inputs in a
        # later run of the same source (HACKS row 9 across runs).
        timing_seed = secrets.randbits(63)
        for attempt in range(TIMING_ATTEMPTS):
            stacks = TimedStacks.after(self.native_audit, pair.reference, pair.candidate)
            session = TimingSession(
                pair=pair,
                settings=self.settings,
                init_seed=self.init_seed,
                policy=policy,
                rng=random.Random(timing_seed + attempt),
                ceilings=ceilings,
                own_errors=self.own_errors,
                bounds=self.bounds,
                stacks=stacks,
            )
            try:
                self.timing = session.run(timed)
            finally:
                self._timed_stacks(stacks)
            self.findings += combine_noise_findings(session.findings)
            if self.timing is not None or not session.deaths or self._candidate_broke():
                break
            if self._past_deadline():  # no fresh workers after the deadline
                self.stopped = "deadline"
                break
            causes += session.deaths
            if attempt + 1 < TIMING_ATTEMPTS:
                self.findings.append(
                    Finding(
                        check=FindingCheck.TIMING_RERUN,
                        severity=Severity.INFO,
                        message="the timing phase was restarted with fresh workers after: "
                        + "; ".join(session.deaths)[:400],
                        evidence={"causes": session.deaths[:5]},
                    )
                )
                pair.restart()
        if self.timing is None:
            reason = "; ".join(causes)[:400] if causes else "the default shape could not be timed"
            self.findings.append(
                Finding(
                    check=FindingCheck.TIMING,
                    severity=Severity.WARN,
                    message=f"the speed is unmeasured: {reason}",
                    evidence={"causes": causes[:5]},
                )
            )
            return
        self.timing.reruns = len(causes)
        spread, source = spread_for(self.settings, worker_threads(self.settings))
        widen_intervals(self.timing, spread, source)
        work = session.work.get("default")
        if work is not None and ceilings is not None:
            self.roofline = roofline_section(work, ceilings, self.timing)

    def _timed_stacks(self, stacks: TimedStacks | None) -> None:
        """The timed rounds' stacks: their profiles in the report's ``op_audit.native``
        (``timed``), and the passthrough they show (:meth:`TimedStacks.findings`)."""
        if stacks is None or not stacks.started:
            return
        section = stacks.finish()
        if self.op_audit is None:
            return
        self.native["timed"] = section
        self.op_audit.native = self.native
        self.findings += stacks.findings(self.op_audit.candidate_ops, self.op_audit.reference_ops)

    def _candidate_broke(self) -> bool:
        return decide_verdict(self.findings) is Verdict.BROKEN

    def _past_24_bits(self, pair: WorkerPair, knobs: dict[str, int]) -> dict[str, int]:
        """The one knob size whose largest tensor passes 2**24 elements most cheaply, where it
        fits; when it does not, an ``info`` finding says so (never skipped silently)."""
        if not self.settings.shape_variants or not self.settings.generated_shapes:
            return {}
        found = past_24_bits(pair, knobs, self.settings)
        if found is None:
            return {}
        if not found.fits:
            self.findings.append(
                Finding(
                    check=FindingCheck.SIZING, severity=Severity.INFO, message=found.skipped_text()
                )
            )
            return {}
        return {found.name: found.value}

    def _past_32_bits(self, pair: WorkerPair, knobs: dict[str, int]) -> list[dict[str, int]]:
        """Per knob, the size whose largest tensor passes 2**31 elements, where it fits; the
        ones that do not fit (on a CPU worker's 8 GiB, all) are named in an ``info``
        finding."""
        if not self.settings.shape_variants:
            return []
        found = [
            size
            for name in knobs
            if (
                size := past_32_bits(pair, knobs, name, self.settings)
                or rows_past_31_bits(pair, knobs, name, self.settings)
            )
        ]
        too_large = [size.skipped_text() for size in found if not size.fits]
        if too_large:
            self.findings.append(
                Finding(
                    check=FindingCheck.SIZING, severity=Severity.INFO, message="; ".join(too_large)
                )
            )
        return [size.knobs(knobs) for size in found if size.fits]

    def _within_budget(
        self, pair: WorkerPair, groups: list[ShapeGroup]
    ) -> tuple[list[ShapeGroup], list[ShapeGroup]]:
        runnable, skipped = [], []
        for group in groups:
            if (
                group.grows
                and not group.device_sized
                and not within_budget(
                    pair, group.knobs, self.settings, unknown_fits=not group.stress
                )
            ):
                # A size past 16 bits is kept by shrinking the task's other knobs around it.
                fitted = (
                    fit_around(
                        pair,
                        group.knobs,
                        group.pinned,
                        self.settings,
                        max_bytes=self.settings.max_call_bytes / FITTED_SHARE,
                    )
                    if group.pinned is not None
                    else None
                )
                if fitted is None:
                    skipped.append(group)
                else:
                    runnable.append(refitted(group, fitted, groups[0].knobs))
            else:
                runnable.append(group)
        return runnable, skipped

    def _report(self, started: float, build_s: float | None) -> Report:
        findings = merge_findings(self.findings)
        verdict = decide_verdict(findings)
        if verdict is Verdict.VERIFIED and (
            self.correctness is None
            or not any(t.outcome is TestOutcome.PASSED for t in self.correctness.tests)
        ):
            findings.append(
                Finding(
                    check=FindingCheck.COVERAGE,
                    severity=Severity.FAIL,
                    forces=Verdict.BROKEN,
                    message="no variant ran to completion",
                )
            )
            verdict = decide_verdict(findings)
        settings = self.settings.model_dump(mode="json")
        assert self.static is not None, "the report follows the static scan"
        report = Report(
            verdict=verdict,
            summary=summarize(verdict, findings, self.correctness),
            findings=findings,
            correctness=self.correctness,
            timing=self.timing,
            roofline=self.roofline,
            op_audit=self.op_audit,
            assumptions=self.assumptions,
            repros=self.repros,
            code=CodeFacts(
                languages=self.static.languages,
                lines_of_code=self.static.lines_of_code,
                reference_lines_of_code=scan_source(
                    self.task.text, str(self.task.path)
                ).lines_of_code,
                build_s=build_s,
            ),
            sandbox=self.sandbox,
            envelope=self.envelope,
            pipeline=Pipeline(
                decided_by=decisive_stage(self.stages.records, verdict),
                stopped=self.stopped,
                stages=self.stages.records,
            ),
            environment=collect_environment(
                self.settings.device,
                worker_threads(self.settings),
                matrix_thread_count(self.settings.device, self.settings.threads),
            ),
            candidate=_artifact(self.candidate, self.candidate_text),
            reference=_artifact(self.task.path, self.task.text),
            settings=settings,
            duration_s=time.monotonic() - started,
        )
        if report.envelope is not None:
            report.envelope.environment = report_fingerprint(report)
        return redacted(report)


def widen_intervals(timing: Timing, spreads: ProcessSpread | None, source: str) -> None:
    """Every speedup interval widened by the machine's between-pair spread at its call time
    (see timing/process_spread.py; :data:`FALLBACK_SPREAD` when none was measured); the report
    states each spread and its source."""

    def spread_at(call_s: float) -> float:
        return spreads.at(call_s) if spreads is not None else FALLBACK_SPREAD

    for shape in timing.per_shape:
        shape.process_spread = spread_at(shape.reference.median_s)
        shape.speedup_ci = widen(shape.speedup, *shape.speedup_ci, shape.process_spread)
    headline = spread_at(timing.reference.median_s)
    timing.speedup_ci = widen(timing.speedup, *timing.speedup_ci, headline)
    timing.process_spread, timing.process_spread_source = headline, source


def _ceilings(settings: Settings) -> Any:
    """The device's ceilings, or None when they cannot be had (the floor check is skipped)."""
    from kernelproof.roofline import ceilings_for

    try:
        return ceilings_for(
            settings.device, settings.dtype or "float32", threads=worker_threads(settings)
        )
    except Exception:  # noqa: BLE001 - a failed calibration must not lose the verification
        return None


def roofline_section(work: dict[str, Any], ceilings: Any, timing: Timing) -> Roofline:
    from kernelproof.roofline import WorkCount, roofline

    counted = WorkCount(flops=float(work["flops"]), bytes=float(work["bytes"]))
    return roofline(
        counted,
        ceilings,
        timing.reference.median_s,
        timing.candidate.median_s,
        reference_bytes=work.get("reference_bytes"),
    )


def _skipped(variant: InputVariant, message: str) -> CorrectnessTest:
    return CorrectnessTest(
        variant=variant, seed=variant.seed, outcome=TestOutcome.SKIPPED, message=message
    )


def _weight_findings(weights: dict[str, Any]) -> list[Finding]:
    unmatched = weights.get("unmatched_candidate") or []
    if not unmatched:
        return []
    return [
        Finding(
            check=FindingCheck.WEIGHTS,
            severity=Severity.INFO,
            message=f"{len(unmatched)} candidate parameter(s) have no reference counterpart of the "
            "same name and shape and keep their own initialisation",
            evidence={"unmatched": unmatched[:30], "copied": len(weights.get("copied", []))},
        )
    ]


def _artifact(path: Path, text: str) -> Artifact:
    import hashlib

    return Artifact(path=str(path), sha256=hashlib.sha256(text.encode()).hexdigest())


def _early_report(
    verdict: Verdict,
    check: FindingCheck,
    message: str,
    reference: Path,
    candidate: Path,
    started: float,
    settings: Settings | None = None,
) -> Report:
    findings = [Finding(check=check, severity=Severity.FAIL, forces=verdict, message=message)]
    load = StageRecord(stage=Stage.LOAD, duration_s=time.monotonic() - started, verdict=verdict)
    return redacted(
        Report(
            verdict=verdict,
            summary=summarize(verdict, findings, None),
            findings=findings,
            pipeline=Pipeline(decided_by=Stage.LOAD, stages=[load]),
            environment=collect_environment(
                settings.device if settings else "cpu",
                worker_threads(settings) if settings else None,
            ),
            candidate=_artifact_if_readable(candidate),
            reference=_artifact_if_readable(reference),
            settings=settings.model_dump(mode="json") if settings else {},
            duration_s=time.monotonic() - started,
        )
    )


def redacted(report: Report) -> Report:
    """``report`` with every known secret masked (:mod:`kernelproof.redaction`): what a
    candidate printed or raised reaches its findings and log tails, and a candidate that got
    hold of a secret must not publish it through them. The same report when none appears."""
    known = secret_values()
    if not known:
        return report
    text = report.model_dump_json()
    if not any(value in text or json.dumps(value)[1:-1] in text for value in known):
        return report
    return Report.model_validate(redact_data(report.model_dump(mode="json"), known))


def _artifact_if_readable(path: Path) -> Artifact | None:
    try:
        return _artifact(path, path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
