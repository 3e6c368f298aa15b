"""``kernelproof e2e``: verify a kernel inside the host model that will run it, and soak it.

The pipeline (docs/e2e.md):

1. **Trace** the host in a trusted subprocess (:mod:`kernelproof.e2e.tracer`) over the same
   matrix ``verify`` runs (seeds, host knobs, value and layout variants) and the soak's steps:
   each target's constructor arguments and state, every call signature, its share of time.
2. **Isolated**: ``verify`` of the candidate against the replaced module, posed as a task
   (generated, or the ``:TASK`` given), which yields its envelope.
3. **Envelope**: every host signature the envelope does not contain is verified in isolation
   at that exact signature (:mod:`kernelproof.e2e.envelope`).
4. **Host**: ``verify`` of the host with the substitution against the host: the same matrix,
   float64 oracle, probes, and the interleaved timing with its CI.
5. **Attribution**: the candidate replayed on the calls the reference host made, against the
   module's float64 oracle on those inputs; the host's error over the worst local error.
6. **Soak** (``--soak STEPS``) and **speed** (Amdahl's prediction against the measurement).

The controller never imports candidate code: every candidate call runs in the sandboxed
candidate workers of the verifications and of the soak.
"""

from __future__ import annotations

import hashlib
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from typing_extensions import Unpack

from kernelproof.config import Settings, SettingsOverrides, resolve_settings
from kernelproof.controller.summary import summarize
from kernelproof.controller.verify import verify_loaded
from kernelproof.e2e.envelope import SETTINGS as ENVELOPE_SETTINGS
from kernelproof.e2e.envelope import check_uncovered, coverage_rows
from kernelproof.e2e.generated import (
    CALL_BASE,
    HostFiles,
    host_candidate,
    module_task,
    replay_task,
    signatures_task,
    soak_task,
)
from kernelproof.e2e.host_failure import host_failure_finding
from kernelproof.e2e.replacement import Replacement, constructor_mismatch
from kernelproof.e2e.soak import SoakOutcome, drift_findings, run_soak
from kernelproof.e2e.soak_shrink import REJECTED, shrink_drift
from kernelproof.e2e.speed import (
    amdahl_row,
    build_speed,
    dominant_signature,
    host_signature_budget,
    speed_finding,
)
from kernelproof.e2e.stream import stream_attribution, trusted_environment
from kernelproof.e2e.trace_record import TargetTrace, TraceRequest, TraceResult, TraceRun
from kernelproof.errors import CandidateFormatError, TaskError, UsageError
from kernelproof.schema import (
    Artifact,
    Environment,
    Finding,
    FindingCheck,
    Report,
    Severity,
    TestOutcome,
    VariantKind,
    Verdict,
    decide_verdict,
)
from kernelproof.schema.e2e import (
    E2E,
    Attribution,
    CallAttribution,
    Speed,
    Substitution,
)
from kernelproof.schema.envelope import CallSignature
from kernelproof.tasks.loaded import LoadedTask
from kernelproof.tasks.source import (
    TaskSource,
    parse_task,
    read_candidate,
    read_task,
    top_level_names,
)
from kernelproof.tasks.variants import draw_seeds, plan_matrix

#: Seconds the tracer may take: it runs the host once per matrix cell and soak step.
TRACE_TIMEOUT_S = 600.0

#: The isolated timing the e2e check needs: the default shape against eager PyTorch. The
#: ``torch.compile`` baseline alone took ~30 s of a 127 s e2e run on the 2-core CI machine.
_MODULE_TIMING = {"compile_baseline": False, "timing_shapes": False}

#: Overrides that describe the host's run only (a host repro's shape and input seeds).
_HOST_ONLY = frozenset({"default_knobs", "input_seeds"})

#: The attribution's replay: one declared shape per recorded call (also under
#: ``--fixed-shapes``), nothing generated.
_REPLAY = {
    "shape_variants": True,
    "generated_shapes": False,
    "value_variants": False,
    "layout_variants": False,
    "timing": False,
    "shrink": False,
    "seeds": 1,
}


def e2e(
    host: str | Path,
    replacements: Sequence[str | Replacement],
    *,
    soak: int = 0,
    profile: str = "default",
    **overrides: Unpack[SettingsOverrides],
) -> Report:
    """Verify each replacement inside ``host`` (and, with ``soak``, over that many steps of its
    loop). Returns one report: the host run's sections, an ``e2e`` section, and the findings
    of every verification it ran. Never raises for a bad host or candidate: those are
    ``error`` and ``broken`` verdicts with their reason."""
    started = time.monotonic()
    host = Path(host)
    subs: list[Replacement] = []
    try:
        subs = [r if isinstance(r, Replacement) else Replacement.parse(r) for r in replacements]
        if not subs:
            raise UsageError("e2e needs at least one --replace TARGET=CANDIDATE")
        host_task = read_task(host)
        settings = resolve_settings(
            profile=profile, task_policy=host_task.policy, overrides=overrides
        )
        for sub in subs:
            if sub.task is not None:
                read_task(sub.task)
    except (UsageError, TaskError) as exc:
        check = FindingCheck.SETTINGS if isinstance(exc, UsageError) else FindingCheck.TASK
        return _early(
            Verdict.ERROR, check, str(exc), host, subs[0].candidate if subs else None, started
        )
    texts = {}
    for sub in subs:
        try:
            texts[sub] = read_candidate(sub.candidate)
        except CandidateFormatError as exc:
            return _early(
                Verdict.BROKEN, FindingCheck.CANDIDATE_FILE, str(exc), host, sub.candidate, started
            )
    base_seed = settings.base_seed if settings.base_seed is not None else secrets.randbits(31)
    scratch = Path(tempfile.mkdtemp(prefix="kernelproof-e2e-"))
    try:
        run = _E2ERun(
            host=HostFiles(path=host.resolve(), text=host_task.text),
            host_task=host_task,
            subs=subs,
            texts=texts,
            settings=settings,
            profile=profile,
            overrides={**overrides, "base_seed": base_seed},
            base_seed=base_seed,
            soak=soak,
            scratch=scratch,
        )
        return run.execute(started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class _E2ERun:
    """The state of one e2e check while it runs."""

    host: HostFiles
    host_task: TaskSource
    subs: list[Replacement]
    texts: dict[Replacement, str]
    settings: Settings
    profile: str
    overrides: dict[str, Any]
    base_seed: int
    soak: int
    scratch: Path
    findings: list[Finding] = field(default_factory=list)
    durations: dict[str, float] = field(default_factory=dict)
    trace_request: TraceRequest | None = None

    def execute(self, started: float) -> Report:
        init_seed, seeds = draw_seeds(self.base_seed, self.settings.seeds)
        traced = self._phase("trace", lambda: self._trace(init_seed, seeds))
        if not traced.ok:
            return _early(
                Verdict.ERROR,
                FindingCheck.SUBSTITUTION,
                f"{self.host.path}: the host cannot be traced: {traced.error}",
                self.host.path,
                self.subs[0].candidate,
                started,
            )
        mismatches = [
            m
            for sub, trace in zip(self.subs, traced.targets)
            if (
                m := constructor_mismatch(
                    self.texts[sub], trace.instances[0].init_args, trace.init_signature
                )
            )
        ]
        substitutions = [
            self._phase("isolated", lambda s=sub, t=trace: self._isolated(s, t))
            for sub, trace in zip(self.subs, traced.targets)
        ]
        if mismatches:
            # Read from the source, so evidence only: the isolated run's construction in the
            # worker decides. When it failed there, nothing further can run.
            self.findings.append(
                Finding(
                    check=FindingCheck.SUBSTITUTION,
                    severity=Severity.WARN,
                    message="; ".join(mismatches),
                )
            )
            if any(s.isolated_verdict is Verdict.BROKEN for s in substitutions):
                return _early(
                    Verdict.BROKEN,
                    FindingCheck.SUBSTITUTION,
                    "",
                    self.host.path,
                    self.subs[0].candidate,
                    started,
                    findings=self.findings,
                    section=E2E(host=str(self.host.path), substitutions=substitutions),
                )
        for substitution, trace in zip(substitutions, traced.targets):
            self._phase("signatures", lambda s=substitution, t=trace: self._coverage(s, t))
        host_report = self._phase("host", self._host_run)
        self.findings += host_report.findings
        section = E2E(
            host=str(self.host.path),
            substitutions=substitutions,
            host_verdict=host_report.verdict,
            command=self._command(f"--soak {self.soak}" if self.soak else "").strip(),
        )
        section.attribution = self._phase(
            "attribution", lambda: self._attribution(traced.targets, host_report)
        )
        if self.soak:
            section.soak = self._phase("soak", lambda: self._soak(init_seed))
        # After the soak, so that a host failing only by drift says so.
        self._explain_host_failure(substitutions, host_report, section.attribution)
        section.speed = self._speed(traced, substitutions, host_report)
        self.durations["total"] = time.monotonic() - started
        section.durations_s = dict(self.durations)
        return self._report(host_report, section, started)

    @property
    def module_overrides(self) -> dict[str, Any]:
        """The overrides of the module's own verifications: the host's shape and input seeds
        (``--knobs``, ``--input-seed``: a host repro) are not the module's, and its timing is
        the default shape's against eager PyTorch only (what the Amdahl table uses)."""
        kept = {k: v for k, v in self.overrides.items() if k not in _HOST_ONLY}
        return {**kept, **_MODULE_TIMING}

    def _phase(self, name: str, work: Any) -> Any:
        began = time.monotonic()
        try:
            return work()
        finally:
            self.durations[name] = self.durations.get(name, 0.0) + time.monotonic() - began

    # -- 1. trace ------------------------------------------------------------------------

    def _trace(self, init_seed: int, seeds: list[int]) -> TraceResult:
        knobs = {**self.host_task.default_knobs, **(self.settings.default_knobs or {})}
        seeds = list(self.settings.input_seeds) if self.settings.input_seeds else seeds
        groups = plan_matrix(
            knobs,
            self.host_task.shapes,
            seeds,
            self.settings,
            task_values=self.host_task.value_variants,
        )
        runs = [
            TraceRun(knobs=g.knobs, variants=g.variants)
            for g in groups
            if not g.stress and g.variants
        ]
        request = TraceRequest(
            host_path=str(self.host.path),
            host_source=self.host.text,
            targets=[s.target for s in self.subs],
            runs=runs,
            init_seed=init_seed,
            device=self.settings.device,
            dtype=self.settings.dtype,
            soak_steps=self.soak,
            out_dir=str(self.scratch),
        )
        self.trace_request = request
        return run_tracer(request, self.scratch)

    # -- 2. isolated, 3. envelope ----------------------------------------------------------

    def _isolated(self, sub: Replacement, trace: TargetTrace) -> Substitution:
        if sub.task is not None:
            task = read_task(sub.task)
        else:
            task = self._write_task(f"module_{_slug(sub.target)}.py", module_task(self.host, trace))
        report = verify_loaded(
            self._loaded(task, sub), profile=self.profile, **self.module_overrides
        )
        self.findings += _relabel(report.findings, f"in isolation ({sub.target})")
        timing = report.timing
        return Substitution(
            target=sub.target,
            candidate=str(sub.candidate),
            task=str(sub.task) if sub.task else None,
            class_name=trace.class_name,
            paths=[i.path for i in trace.instances],
            init_signature=trace.init_signature,
            init_args=list(trace.instances[0].init_args),
            isolated_verdict=report.verdict,
            isolated_summary=report.summary,
            isolated_speedup=timing.speedup if timing else None,
            isolated_speedup_ci=timing.speedup_ci if timing else None,
            isolated_duration_s=report.duration_s,
            envelope=report.envelope,
        )

    def _coverage(self, substitution: Substitution, trace: TargetTrace) -> None:
        substitution.coverage = coverage_rows(substitution, trace)
        if substitution.isolated_verdict is not Verdict.VERIFIED:
            return  # already failing alone: checking more signatures adds nothing
        sub = next(s for s in self.subs if s.target == substitution.target)
        self.findings += check_uncovered(
            sub.target,
            self.host,
            trace,
            substitution.coverage,
            lambda name, text, extra: self._verify_module(
                sub, f"{_slug(sub.target)}_{name}", text, extra
            ),
        )

    def _verify_module(
        self, sub: Replacement, name: str, text: str, extra: dict[str, Any]
    ) -> Report:
        """The candidate verified against a generated task of its module."""
        return verify_loaded(
            self._loaded(self._write_task(name, text), sub),
            profile=self.profile,
            **{**self.module_overrides, **extra},
        )

    # -- 4. host, 5. attribution -----------------------------------------------------------

    def _host_run(self) -> Report:
        wrapper = self.scratch / "host_with_substitution.py"
        wrapper.write_text(
            host_candidate(self.host, [(s.target, s.candidate.resolve()) for s in self.subs])
        )
        loaded = LoadedTask(
            task=self.host_task,
            candidate_path=wrapper,
            candidate_text="\n".join(self.texts[s] for s in self.subs),
            candidate_file=self.subs[0].candidate,
            readable_paths=self._candidate_folders(),
            format="e2e",
        )
        report = verify_loaded(loaded, profile=self.profile, **self.overrides)
        # A host failure reruns through e2e (the host alone against the candidate file would
        # not be the same check); the standalone script embeds the generated host candidate.
        return report.model_copy(
            update={
                "repros": [
                    r.model_copy(
                        update={
                            "command": self._command(
                                f"--knobs {_knobs(r.knobs)} "
                                f"--input-seed {r.seed} --seeds 1 --fixed-shapes --no-timing"
                            )
                        }
                    )
                    for r in report.repros
                ]
            }
        )

    def _command(self, extra: str) -> str:
        """The ``kernelproof e2e`` command of this check, with ``extra`` options (and the
        run's ``--knobs``, unless ``extra`` sets its own)."""
        replaced = " ".join(f"--replace {shlex.quote(s.describe())}" for s in self.subs)
        if self.settings.default_knobs and "--knobs" not in extra:
            extra = f"{extra} --knobs {_knobs(self.settings.default_knobs)}"
        return (
            f"kernelproof e2e {shlex.quote(str(self.host.path))} {replaced} "
            f"--seed {self.base_seed} {extra}"
        )

    def _attribution(self, traces: list[TargetTrace], host_report: Report) -> Attribution:
        attribution = Attribution()
        local_errors: list[float] = []
        streamed: list[LoadedTask | None] = []
        for sub, trace in zip(self.subs, traces):
            if trace.recorded_calls == 0:
                streamed.append(None)
                continue
            task = self._write_task(f"replay_{_slug(sub.target)}.py", replay_task(self.host, trace))
            streamed.append(self._loaded(task, sub))
            report = verify_loaded(
                self._loaded(task, sub),
                profile=self.profile,
                **{**self.module_overrides, **_REPLAY},
            )
            calls = _record_calls(trace)
            for test in report.correctness.tests if report.correctness else []:
                if (
                    test.variant.kind not in (VariantKind.SEED, VariantKind.SHAPE)
                    or ("@" in test.variant.name)
                    or test.outcome is TestOutcome.SKIPPED
                ):
                    continue
                index = test.variant.knobs.get("call", CALL_BASE) - CALL_BASE
                errors = [o.candidate_error for o in test.outputs if o.candidate_error is not None]
                attribution.calls.append(
                    CallAttribution(
                        target=sub.target,
                        call=index,
                        path=calls.get(index, ""),
                        error_ratio=test.error_ratio,
                        error=max(errors) if errors else None,
                        passed=test.outcome is TestOutcome.PASSED,
                    )
                )
                local_errors += errors
        local = [c.error_ratio for c in attribution.calls if c.error_ratio is not None]
        attribution.max_local_error_ratio = max(local) if local else None
        attribution.max_local_error = max(local_errors) if local_errors else None
        if self.trace_request is not None and any(streamed):
            stream = stream_attribution(
                self.trace_request,
                streamed,
                [s.target for s in self.subs],
                self.settings,
                self.scratch,
            )
            attribution.stream_calls, attribution.stream_note = stream.calls, stream.note
            ratios = [c.error_ratio for c in stream.calls if c.error_ratio is not None]
            errors = [c.error for c in stream.calls if c.error is not None]
            attribution.max_stream_error_ratio = max(ratios) if ratios else None
            attribution.max_stream_error = max(errors) if errors else None
        host_tests = [
            t
            for t in (host_report.correctness.tests if host_report.correctness else [])
            if t.variant.kind is VariantKind.SEED and not t.variant.knobs
        ]
        host = [t.error_ratio for t in host_tests if t.error_ratio is not None]
        attribution.host_error_ratio = max(host) if host else None
        host_errors = [
            o.candidate_error
            for t in host_tests
            for o in t.outputs
            if o.candidate_error is not None
        ]
        attribution.host_error = max(host_errors) if host_errors else None
        worst_local = attribution.max_stream_error or attribution.max_local_error
        if attribution.host_error is not None and worst_local:
            attribution.amplification = attribution.host_error / worst_local
        attribution.calls.sort(key=lambda c: (c.target, c.call))
        return attribution

    def _explain_host_failure(
        self, substitutions: list[Substitution], host_report: Report, attribution: Attribution
    ) -> None:
        """A module that passes alone but breaks the host: say so, with what failed (its
        wrong variants, or the host's decisive findings and the soak's drift)."""
        if not all(s.isolated_verdict is Verdict.VERIFIED for s in substitutions):
            return
        finding = host_failure_finding(
            [s.target for s in substitutions], host_report, attribution, self.findings
        )
        if finding is not None:
            self.findings.append(finding)

    # -- 6. soak and speed -----------------------------------------------------------------

    def _soak(self, init_seed: int) -> Any:
        knobs = {**self.host_task.default_knobs, **(self.settings.default_knobs or {})}
        outcome = self._soak_at(knobs, self.soak, init_seed, until_drift=False)
        self.findings += outcome.findings
        soak = outcome.soak
        if soak is None or soak.first_drift_step is None or not self.settings.shrink:
            return soak

        def first_drift(trial: dict[str, int], steps: int) -> int | None:
            found = self._soak_at(trial, steps, init_seed, until_drift=True).soak
            if found is None or found.steps == 0:
                return REJECTED
            return found.first_drift_step

        repro = shrink_drift(first_drift, knobs, soak.first_drift_step)
        self.durations["soak-shrink"] = repro.seconds
        shown = _knobs(repro.knobs)
        repro.command = self._command(
            f"--soak {repro.steps} --knobs {shown} --no-timing --no-shrink"
        )
        soak.drift_repro = repro
        # The run's drift finding, with the shrunk command in place of the whole soak's.
        self.findings = [f for f in self.findings if f.check is not FindingCheck.SOAK_DRIFT]
        self.findings += [
            f.model_copy(
                update={
                    "message": f.message + f" (shrunk in {repro.tries} trial soak(s): at {shown} "
                    f"it drifts by step {repro.steps - 1})",
                    "evidence": {
                        **f.evidence,
                        "repro_knobs": repro.knobs,
                        "repro_steps": repro.steps,
                    },
                }
            )
            for f in drift_findings(soak, repro.command)
        ]
        return soak

    def _soak_at(
        self, knobs: dict[str, int], steps: int, init_seed: int, *, until_drift: bool
    ) -> SoakOutcome:
        """A soak of the host at ``knobs``: the generated loop task and its substituted twin,
        from the host's text at those knobs."""
        host = HostFiles(path=self.host.path, text=self.host_task.render(knobs))
        task = self._write_task("soak_task.py", soak_task(host, init_seed))
        wrapper = self.scratch / "soak_with_substitution.py"
        wrapper.write_text(
            host_candidate(
                host, [(s.target, s.candidate.resolve()) for s in self.subs], soak_seed=init_seed
            )
        )
        loaded = LoadedTask(
            task=task,
            candidate_path=wrapper,
            candidate_text="\n".join(self.texts[s] for s in self.subs),
            candidate_file=self.subs[0].candidate,
            readable_paths=self._candidate_folders(),
            format="e2e",
        )
        return run_soak(
            loaded,
            self.settings,
            steps,
            init_seed,
            has_loop="soak_steps" in top_level_names(self.host.path),
            repro=self._command("--soak {steps} --no-timing"),
            until_drift=until_drift,
        )

    def _speed(
        self, traced: TraceResult, substitutions: list[Substitution], host_report: Report
    ) -> Speed:
        rows = []
        for position, (sub, substitution, trace) in enumerate(
            zip(self.subs, substitutions, traced.targets)
        ):
            dominant = dominant_signature(trace)
            at_host = None
            if (
                dominant is not None
                and self.settings.timing
                and host_report.timing is not None
                and substitution.isolated_verdict is Verdict.VERIFIED
            ):
                at_host = self._phase(
                    "host-signature", lambda s=sub, t=trace, d=dominant: self._time_at(s, t, d[1])
                )
            rows.append(amdahl_row(substitution, traced, position, trace, at_host, dominant))
        speed = build_speed(traced, rows, host_report)
        if (finding := speed_finding(speed)) is not None:
            self.findings.append(finding)
        return speed

    def _time_at(
        self, sub: Replacement, trace: TargetTrace, signature: CallSignature
    ) -> Report | None:
        """The candidate timed against the module at one exact host signature."""
        init = dict(zip(trace.signatures, trace.signature_init)).get(
            signature, trace.instances[0].init_repr
        )
        report = self._verify_module(
            sub,
            f"timed_{_slug(sub.target)}.py",
            signatures_task(self.host, trace, [(signature, init)]),
            {
                **ENVELOPE_SETTINGS,
                "timing": True,
                "seeds": 1,
                "budget_s": host_signature_budget(self.settings.budget_s),
            },
        )
        return report if report.verdict is Verdict.VERIFIED else None

    # -- helpers ---------------------------------------------------------------------------

    def _write_task(self, name: str, text: str) -> TaskSource:
        path = self.scratch / name
        path.write_text(text)
        return parse_task(text, path)

    def _loaded(self, task: TaskSource, sub: Replacement) -> LoadedTask:
        # The generated tasks load the tracer's record (replayed inputs) in both workers.
        return LoadedTask(
            task=task,
            candidate_path=sub.candidate,
            candidate_text=self.texts[sub],
            candidate_file=sub.candidate,
            readable_paths=[str(self.scratch)],
        )

    def _candidate_folders(self) -> list[str]:
        return sorted({str(s.candidate.resolve().parent) for s in self.subs})

    def _report(self, host_report: Report, section: E2E, started: float) -> Report:
        verdict = decide_verdict(self.findings)
        correctness = host_report.correctness
        return host_report.model_copy(
            update={
                "verdict": verdict,
                "summary": _summary(verdict, self.findings, correctness, section),
                "findings": self.findings,
                "e2e": section,
                "reference": _artifact(self.host.path, self.host.text),
                "duration_s": time.monotonic() - started,
            }
        )


def run_tracer(request: TraceRequest, scratch: Path) -> TraceResult:
    """Run the tracer in its own process (trusted host code only) and read its answer."""
    request_path, result_path = scratch / "trace_request.json", scratch / "trace_result.json"
    request_path.write_text(request.model_dump_json())
    environment = trusted_environment()
    log = scratch / "tracer.log"
    try:
        with log.open("w") as output:
            completed = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kernelproof.e2e.tracer",
                    str(request_path),
                    str(result_path),
                ],
                env=environment,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=TRACE_TIMEOUT_S,
                check=False,
            )
    except subprocess.TimeoutExpired:
        return TraceResult(
            ok=False, error=f"the host did not finish tracing within {TRACE_TIMEOUT_S:.0f} s"
        )
    if completed.returncode != 0 or not result_path.exists():
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return TraceResult(
            ok=False, error=f"the tracer exited with status {completed.returncode}: {tail[0][:300]}"
        )
    return TraceResult.model_validate_json(result_path.read_text())


def _record_calls(trace: TargetTrace) -> dict[int, str]:
    import torch

    record = torch.load(trace.calls_file, weights_only=True)
    return {index: call["path"] for index, call in enumerate(record["calls"])}


def _relabel(findings: list[Finding], where: str) -> list[Finding]:
    """Findings of another verification, said to come from it."""
    return [
        f.model_copy(
            update={
                "message": f"{where}: {f.message}",
                "variant": f"{where}: {f.variant}" if f.variant else where,
            }
        )
        for f in findings
    ]


def _summary(verdict: Verdict, findings: list[Finding], correctness: Any, section: E2E) -> str:
    isolated = ", ".join(
        f"{s.target} {s.isolated_verdict.value} alone" for s in section.substitutions
    )
    host = section.host_verdict.value if section.host_verdict else "not run"
    return f"{summarize(verdict, findings, correctness)} ({isolated}; host run {host})"


def _knobs(knobs: dict[str, int]) -> str:
    """``--knobs``'s value: ``name=value,...``."""
    return ",".join(f"{k}={v}" for k, v in knobs.items())


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:40]


def _artifact(path: Path, text: str) -> Artifact:
    return Artifact(path=str(path), sha256=hashlib.sha256(text.encode()).hexdigest())


def _early(
    verdict: Verdict,
    check: FindingCheck,
    message: str,
    host: Path,
    candidate: Path | None,
    started: float,
    *,
    findings: list[Finding] | None = None,
    section: E2E | None = None,
) -> Report:
    """A report for an e2e check that stopped before the host ran: one finding of ``check``
    forcing ``verdict``, or the ``findings`` gathered so far (which decide the verdict)."""
    from kernelproof.controller.environment import collect_environment

    if findings is None:
        findings = [Finding(check=check, severity=Severity.FAIL, forces=verdict, message=message)]
    verdict = decide_verdict(findings)

    def artifact(path: Path | None) -> Artifact | None:
        try:
            return _artifact(path, path.read_text()) if path is not None else None
        except (OSError, UnicodeDecodeError):
            return None

    environment: Environment = collect_environment("cpu", None)
    return Report(
        verdict=verdict,
        summary=summarize(verdict, findings, None),
        findings=findings,
        environment=environment,
        candidate=artifact(candidate),
        reference=artifact(host),
        e2e=section or E2E(host=str(host)),
        duration_s=time.monotonic() - started,
    )
