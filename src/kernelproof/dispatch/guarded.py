"""The verified-dispatch guard: a module that serves a verified candidate inside its envelope,
spot-checks it against the reference, and rolls back on the first disagreement.

What a call costs:

* outside the envelope, or after a rollback: the reference's call, plus the routing check;
* inside, unsampled: the candidate's call plus the routing check, which is a dict lookup on a
  tuple of the arguments' metadata (:mod:`kernelproof.dispatch.routing`), one random draw and one
  uncontended lock for the counters (``benchmarks/guard_overhead.py`` measures it);
* inside, sampled (``shadow_rate``): also a copy of the inputs, the reference and, under the
  report's oracle tolerance, a float64 run of it (:mod:`kernelproof.dispatch.shadow`). On CUDA
  those are queued on a side stream and judged later (:mod:`kernelproof.dispatch.side_stream`).

The guard runs the candidate in the serving process: it guards against a verified kernel that
meets inputs it was not verified on or goes wrong later (a time bomb, a drifting build), not
against code that attacks the process it runs in. Verification (``kernelproof verify``, with its
sandbox) is where adversarial code is caught.
"""

from __future__ import annotations

import random
import threading
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from kernelproof.dispatch.drift import DEFAULT_WINDOW_S, DriftRecorder
from kernelproof.dispatch.environment_gate import EnvironmentGate, check_environment
from kernelproof.dispatch.incidents import (
    new_incident_folder,
    replay_command,
    replay_settings,
    utc_now,
    write_incident,
)
from kernelproof.dispatch.routing import RoutingTable, routing_key
from kernelproof.dispatch.shadow import ShadowCall, ShadowCheck, ShadowOutcome
from kernelproof.dispatch.side_stream import PendingCheck, SideStreamQueue
from kernelproof.errors import KernelproofError
from kernelproof.report.commands import verify_command
from kernelproof.schema.drift import DRIFT_FILE
from kernelproof.schema.envelope import CallSignature
from kernelproof.schema.incident import Incident, IncidentKind
from kernelproof.schema.report import Report
from kernelproof.schema.verdict import Verdict
from kernelproof.tasks.saved_inputs import save_arguments

MismatchPolicy = Literal["rollback", "raise", "log"]
EnvironmentPolicy = Literal["reference", "shadow-only"]

#: What ``on_environment_change`` may say, and what each does when this process is not the
#: environment the report was proved in.
ENVIRONMENT_POLICIES: dict[str, str] = {
    "reference": "send every call to the reference (the default)",
    "shadow-only": "send every call to the reference, and run the candidate on a "
    "shadow_rate share of them to compare it, never returning its output",
}

#: What ``on_mismatch`` may say, and what each does.
MISMATCH_POLICIES: dict[str, str] = {
    "rollback": "send every later call to the reference, for the rest of the process",
    "raise": "raise CandidateMismatch from the call that saw the mismatch",
    "log": "record the incident and keep serving the candidate",
}


class GuardError(KernelproofError, ValueError):
    """The guard cannot be set up as asked (an unverified report, a bad argument)."""


class EnvironmentMismatchWarning(UserWarning):
    """The guard found this process outside the environment the report was proved in: the
    candidate does not serve (see :attr:`GuardedModule.environment`)."""


class CandidateMismatch(KernelproofError, RuntimeError):
    """A shadow check saw the candidate disagree with its reference (``on_mismatch="raise"``).
    ``incident`` holds what was seen; the folder it names holds the tensors."""

    def __init__(self, message: str, incident: Incident) -> None:
        super().__init__(message)
        self.incident = incident


@dataclass(slots=True)
class _Counters:
    """The guard's counters. Kept off the module: ``nn.Module.__setattr__`` costs about a
    microsecond per assignment (it looks for parameters and submodules), three per call."""

    calls: int = 0
    candidate_calls: int = 0
    reference_calls: int = 0
    out_of_envelope: int = 0
    shadow_checks: int = 0
    mismatches: int = 0
    rolled_back: bool = False
    outside_environment: bool = False
    """True when the environment differs from the proved one: the candidate never answers."""

    shadow_only: bool = False
    """True when, outside the environment, the candidate still shadows sampled calls."""


class GuardedModule(torch.nn.Module):
    """A candidate behind the verified-dispatch guard. Build it with :func:`guard`.

    Calls take positional arguments; a call with keyword arguments goes to the reference (its
    signature cannot be checked against the envelope, which knows positional ones)."""

    def __init__(
        self,
        candidate: torch.nn.Module,
        reference: torch.nn.Module,
        report: Report,
        *,
        shadow_rate: float,
        on_mismatch: MismatchPolicy,
        incident_dir: Path | None,
        on_incident: Callable[[Incident], Any] | None,
        seed: int | None,
        environment: EnvironmentGate,
        on_environment_change: EnvironmentPolicy = "reference",
        report_path: Path | None = None,
        drift_log: Path | None = None,
        drift_window_s: float = DEFAULT_WINDOW_S,
    ) -> None:
        super().__init__()
        assert report.envelope is not None and report.correctness is not None
        self.candidate = candidate
        self.reference = reference
        self.report = report
        self.shadow_rate = shadow_rate
        self.on_mismatch = on_mismatch
        self.incident_dir = incident_dir
        self.on_incident = on_incident
        self.incidents: list[Incident] = []
        """Every incident seen, in order (also written to ``incident_dir`` when set)."""

        self._routes = RoutingTable(report.envelope)
        # The hot path reads these as plain attributes: a submodule is found through
        # nn.Module.__getattr__, which costs about a microsecond per lookup (measured here).
        self._knobs_for = self._routes.knobs_for
        self._decide = self._routes.decide
        self.drift = DriftRecorder(drift_log, report, drift_window_s) if drift_log else None
        """The drift recorder (None without a drift log); ``kernelproof guard report`` reads
        what it writes."""

        self._pair = (candidate, reference)
        self._check = ShadowCheck(reference, report.correctness.tolerance)
        self._draw = random.Random(seed).random
        self._side: dict[torch.device, SideStreamQueue] = {}
        self._lock = threading.Lock()
        self._counts = _Counters()
        self.environment = environment
        """The start-up comparison of this process with the proved environment."""

        self._blocked = environment.blocked
        if self._blocked:
            self._counts.outside_environment = True
            self._counts.shadow_only = on_environment_change == "shadow-only"
            self._refuse_environment(report_path)

    # -- the call --------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Route one call (see the class and module docstrings)."""
        if torch.compiler.is_compiling():
            # Inside a compiled model the guard runs eagerly: a graph break, never traced (the
            # verified candidate must run as verified). Only there, because the disabling
            # wrapper costs ~2 us per call (measured here), more than the rest of routing.
            return self._route_eagerly(*args, **kwargs)
        return self._route(*args, **kwargs)

    def _route(self, *args: Any, **kwargs: Any) -> Any:
        if self._blocked:
            return self._outside_environment(args, kwargs)
        if self._side:
            self._judge_finished(wait=False)
        candidate, reference = self._pair
        counts = self._counts
        if self.drift is not None:
            knobs, sampled = self._record_drift(args, kwargs)
        else:
            knobs = None if (kwargs or counts.rolled_back) else self._knobs_for(args)
            sampled = None
        if knobs is None:
            with self._lock:
                counts.calls += 1
                counts.reference_calls += 1
                if not counts.rolled_back:
                    counts.out_of_envelope += 1
            return reference(*args, **kwargs)
        rate = self.shadow_rate
        if sampled is None:
            sampled = rate > 0.0 and self._draw() < rate
        with self._lock:
            index = counts.calls
            counts.calls += 1
            counts.candidate_calls += 1
            if sampled:
                counts.shadow_checks += 1
        if sampled:
            return self._shadow(args, index, knobs)
        try:
            return candidate(*args)
        except Exception as exc:  # noqa: BLE001 - a raise inside the envelope is an incident
            return self._answer_raise(args, index, knobs, exc)

    _route_eagerly = torch.compiler.disable(_route)

    def _record_drift(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[dict[str, int] | None, bool]:
        """Count the call for the drift log (inside the envelope or not, whatever the routing)
        and look at its values when it is sampled. The routing decision and the draw."""
        key = None if kwargs else routing_key(args)
        inside = self._decide(key, args)
        drift = self.drift
        assert drift is not None
        drift.count(key, args, inside is not None)
        rate = self.shadow_rate
        sampled = rate > 0.0 and self._draw() < rate
        if sampled:
            drift.observe(args)
        return (None if (kwargs or self._counts.rolled_back) else inside), sampled

    @property
    def stats(self) -> dict[str, Any]:
        """The counters: ``calls`` = ``candidate_calls`` + ``reference_calls``;
        ``shadow_checks`` and ``mismatches`` count among the candidate's calls;
        ``out_of_envelope`` among the reference's (calls outside the envelope before any
        rollback); ``rolled_back`` says whether every call now goes to the reference. On CUDA
        checks still queued are not in ``mismatches`` until judged (see :meth:`flush`)."""
        with self._lock:
            return asdict(self._counts)

    def flush(self) -> None:
        """Judge every shadow check still queued on a CUDA side stream (waits for them; on CPU
        checks are judged within their call), and write the drift log's current window."""
        self._judge_finished(wait=True)
        if self.drift is not None:
            self.drift.flush()

    def extra_repr(self) -> str:
        envelope = self.report.envelope
        described = envelope.describe() if envelope is not None else None  # never None: __init__
        return (
            f"shadow_rate={self.shadow_rate}, on_mismatch={self.on_mismatch!r}, "
            f"envelope={described!r}"
        )

    def _tolerance(self) -> dict[str, Any]:
        """The tolerance the report was verified at, for an incident (``guard`` refused a
        report without its correctness section)."""
        correctness = self.report.correctness
        assert correctness is not None
        return dict(correctness.tolerance)

    # -- shadow checks ---------------------------------------------------------------------

    def _shadow(self, args: tuple[Any, ...], index: int, knobs: dict[str, int]) -> Any:
        side = self._side_queue(args)
        if side is None:
            call = self._check.start(self.candidate, args)
            outcome = self._check.finish(call, args)
            if outcome.ok:
                return call.candidate_output
            self._handle(outcome, index, knobs, CallSignature.of(args))
            return call.reference_output
        call = self._check.start(self.candidate, args, stream=side.stream)
        if call.raised is not None:  # nothing to return but the reference's answer: wait
            call.done.synchronize()
            self._handle(self._check.finish(call, args), index, knobs, CallSignature.of(args))
            return side.hand_back(call.reference_output)
        overflow = side.submit(PendingCheck(call, index, CallSignature.of(args), knobs))
        with side.judging():
            for check in overflow:
                self._judge(check)
        return call.candidate_output

    def _answer_raise(
        self, args: tuple[Any, ...], index: int, knobs: dict[str, int], exc: Exception
    ) -> Any:
        """An unsampled call on which the candidate raised: the reference answers it, and it
        is an incident (inputs as they were after the raise: nothing was saved before)."""
        call = ShadowCall(
            saved=[a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args],
            raised=exc,
        )
        call.reference_output = self.reference(*args)
        outcome = ShadowOutcome(
            [IncidentKind.RAISED],
            f"the candidate raised {type(exc).__name__}: {str(exc)[:300]} "
            "(an unsampled call: inputs saved after the raise)",
            [],
            None,
            call,
        )
        self._handle(outcome, index, knobs, CallSignature.of(args))
        return call.reference_output

    def _side_queue(self, args: tuple[Any, ...]) -> SideStreamQueue | None:
        device = next((a.device for a in args if isinstance(a, torch.Tensor) and a.is_cuda), None)
        if device is None:
            return None
        if device not in self._side:
            self._side[device] = SideStreamQueue(device)
        return self._side[device]

    def _judge_finished(self, wait: bool) -> None:
        for side in list(self._side.values()):
            finished = side.ready(wait=wait)
            with side.judging():
                for check in finished:
                    self._judge(check)

    def _judge(self, check: PendingCheck) -> None:
        outcome = self._check.finish(check.call, None)
        if not outcome.ok:
            self._handle(outcome, check.index, check.knobs, check.args_signature)

    # -- outside the proved environment ----------------------------------------------------

    def _outside_environment(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Every call is the reference's. In shadow-only mode a sampled call inside the
        envelope also runs the candidate, on copies of the inputs (the caller's tensors never
        reach an unproved kernel), and compares it; its output is never returned."""
        counts = self._counts
        reference = self.reference
        if self.drift is not None:
            knobs, drawn = self._record_drift(args, kwargs)
            knobs = knobs if counts.shadow_only else None
            sampled = knobs is not None and drawn
        else:
            knobs = (
                None
                if (kwargs or counts.rolled_back or not counts.shadow_only)
                else self._knobs_for(args)
            )
            sampled = (
                knobs is not None and self.shadow_rate > 0.0 and self._draw() < self.shadow_rate
            )
        with self._lock:
            index = counts.calls
            counts.calls += 1
            counts.reference_calls += 1
            if sampled:
                counts.shadow_checks += 1
        if not sampled:
            return reference(*args, **kwargs)
        copies = tuple(a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args)
        call = self._check.start(self.candidate, copies)
        if call.done is not None:
            call.done.synchronize()
        outcome = self._check.finish(call, copies)
        if not outcome.ok:
            self._handle(outcome, index, knobs or {}, CallSignature.of(args))
        return reference(*args)

    def _refuse_environment(self, report_path: Path | None) -> None:
        """The start-up incident: what differs, what the guard does, how to re-prove."""
        gate = self.environment
        diff = gate.diff
        shadow = self._counts.shadow_only
        doing = (
            "every call goes to the reference; the candidate shadows a "
            f"{self.shadow_rate:g} share of them (shadow-only), its output never returned"
            if shadow
            else "every call goes to the reference"
        )
        command = (
            f"kernelproof recheck {report_path}"
            if report_path is not None
            else verify_command(self.report).text + " --json report.json"
        )
        detail = (
            f"not the environment the report was proved in: {diff.describe()}; {doing}. "
            f"Re-prove it here: {command}"
        )
        folder = new_incident_folder(self.incident_dir, None) if self.incident_dir else None
        reference, candidate = self.report.reference, self.report.candidate
        incident = Incident(
            id=folder.name if folder is not None else "environment",
            kinds=[IncidentKind.ENVIRONMENT],
            call_index=None,
            signature=None,
            detail=detail,
            policy=self.on_mismatch,
            tolerance=self._tolerance(),
            created_utc=utc_now(),
            inputs_file="",
            candidate_output_file=None,
            reference_output_file="",
            reference_path=reference.path if reference else None,
            candidate_path=candidate.path if candidate else None,
            command=command,
            environment=diff.invalidating + [c for c in diff.changes if c not in diff.invalidating],
        )
        if folder is not None:
            write_incident(incident, folder)
        self.incidents.append(incident)
        warnings.warn(f"kernelproof.guard: {detail}", EnvironmentMismatchWarning, stacklevel=4)
        if self.on_incident is not None:
            self.on_incident(incident)

    # -- incidents -------------------------------------------------------------------------

    def _handle(
        self, outcome: ShadowOutcome, index: int, knobs: dict[str, int], signature: CallSignature
    ) -> None:
        with self._lock:
            self._counts.mismatches += 1
            if self.on_mismatch == "rollback":
                self._counts.rolled_back = True
        incident = self._incident(outcome, index, knobs, signature)
        self.incidents.append(incident)
        if self.on_incident is not None:
            self.on_incident(incident)
        if self.on_mismatch == "raise":
            where = f"; written to {self.incident_dir / incident.id}" if self.incident_dir else ""
            raise CandidateMismatch(
                f"the guarded candidate disagreed with its reference on call {index} "
                f"({outcome.detail[:300]}){where}. on_mismatch='raise' raises; pass "
                "on_mismatch='rollback' to serve the reference instead",
                incident,
            )

    def _incident(
        self, outcome: ShadowOutcome, index: int, knobs: dict[str, int], signature: CallSignature
    ) -> Incident:
        call = outcome.call
        folder = new_incident_folder(self.incident_dir, index) if self.incident_dir else None
        command, replay = None, {}
        if folder is not None:
            save_arguments(folder / "inputs.pt", call.saved)
            if call.raised is None:
                save_arguments(folder / "candidate_output.pt", [call.candidate_output])
            save_arguments(folder / "reference_output.pt", [call.reference_output])
            replay = replay_settings(self.report, knobs, folder / "inputs.pt")
            command = replay_command(self.report, replay)
        reference, candidate = self.report.reference, self.report.candidate
        incident = Incident(
            id=folder.name if folder is not None else f"call{index:08d}",
            kinds=outcome.kinds,
            call_index=index,
            signature=signature,
            knobs=knobs,
            error_ratio=outcome.error_ratio,
            outputs=outcome.comparisons,
            detail=outcome.detail or "disagreement",
            policy=self.on_mismatch,
            tolerance=self._tolerance(),
            created_utc=utc_now(),
            candidate_output_file=None if call.raised is not None else "candidate_output.pt",
            reference_path=reference.path if reference else None,
            candidate_path=candidate.path if candidate else None,
            command=command,
            replay_settings=replay,
        )
        if folder is not None:
            write_incident(incident, folder)
        return incident


def guard(
    candidate: torch.nn.Module,
    reference: torch.nn.Module,
    report: Report | str | Path,
    *,
    shadow_rate: float = 0.01,
    on_mismatch: MismatchPolicy = "rollback",
    incident_dir: str | Path | None = None,
    on_incident: Callable[[Incident], Any] | None = None,
    seed: int | None = None,
    on_environment_change: EnvironmentPolicy = "reference",
    candidate_source: str | Path | None = None,
    drift_log: str | Path | None = None,
    drift_window_s: float = DEFAULT_WINDOW_S,
) -> GuardedModule:
    """Wrap a verified ``candidate`` so that production calls reach it only inside the
    report's envelope, a ``shadow_rate`` share of them checked against ``reference``.

    ``report`` is a :class:`~kernelproof.schema.Report` or the path of its JSON; its verdict
    must be ``verified``. ``on_mismatch`` is ``"rollback"``, ``"raise"`` or ``"log"``. Each
    mismatch writes an incident under ``incident_dir`` (when given) and is passed to
    ``on_incident``. ``seed`` fixes which calls are sampled. Raises :class:`GuardError` for an
    unverified report or a bad argument.

    At start-up the guard compares this process with the environment the report was proved in
    (:mod:`kernelproof.dispatch.environment_gate`; the rule is
    :mod:`kernelproof.schema.environment_rule`). On an invalidating difference (another torch,
    instruction set, GPU, thread count, or a candidate source whose hash is not the proved
    one) it records one ``environment`` incident naming the difference and the recheck
    command, warns (:class:`EnvironmentMismatchWarning`), and sends every call to the
    reference; ``on_environment_change="shadow-only"`` also runs the candidate on a
    ``shadow_rate`` share of calls to compare it, never returning its output.
    ``candidate_source`` names the file the candidate was built from, when its class was not
    defined in one (the guard hashes it against the report's).

    The guard also records production drift (:mod:`kernelproof.dispatch.drift`): every call's
    signature counted per ``drift_window_s`` window, and the values of the sampled calls,
    appended to ``drift_log`` (by default ``drift.jsonl`` in ``incident_dir``; no log without
    either). ``kernelproof guard report LOG`` shows it; ``kernelproof guard shapes LOG
    --task TASK`` turns the signatures that fell outside into the task's ``SHAPES``."""
    from kernelproof.report.files import read_json

    for name, module in (("candidate", candidate), ("reference", reference)):
        if not isinstance(module, torch.nn.Module):
            raise GuardError(
                f"{name} is a {type(module).__name__}, not a torch.nn.Module; pass "
                f"the module itself (e.g. ModelNew(...) and Model(...))"
            )
    report_path = None
    if not isinstance(report, Report):
        report_path = Path(report)
        report = read_json(report)
    if report.verdict is not Verdict.VERIFIED:
        raise GuardError(
            f"the report's verdict is {report.verdict.value!r}: the guard only ships "
            f"verified candidates ({report.summary or 'see its findings'}). Fix the "
            "candidate and verify it again"
        )
    if report.envelope is None or report.correctness is None:
        raise GuardError(
            "the report carries no envelope (it predates envelopes, or no cell "
            "ran); verify the candidate again with this kernelproof"
        )
    if not 0.0 <= shadow_rate <= 1.0:
        raise GuardError(
            f"shadow_rate={shadow_rate!r} is not a share of calls; pass a number "
            "from 0.0 (never check) to 1.0 (check every call)"
        )
    if on_mismatch not in MISMATCH_POLICIES:
        raise GuardError(
            f"on_mismatch={on_mismatch!r} is not a policy; pass one of "
            + ", ".join(f"{k!r} ({v})" for k, v in MISMATCH_POLICIES.items())
        )
    if on_environment_change not in ENVIRONMENT_POLICIES:
        raise GuardError(
            f"on_environment_change={on_environment_change!r} is not a policy; "
            "pass one of " + ", ".join(f"{k!r} ({v})" for k, v in ENVIRONMENT_POLICIES.items())
        )
    if on_environment_change == "shadow-only" and not shadow_rate > 0.0:
        raise GuardError(
            "on_environment_change='shadow-only' with shadow_rate=0 compares "
            "nothing; pass a shadow_rate above 0 (e.g. 0.05)"
        )
    if not drift_window_s > 0:
        raise GuardError(
            f"drift_window_s={drift_window_s!r} is not a duration; pass seconds "
            "above 0 (default 60)"
        )
    if drift_log is None and incident_dir is not None:
        drift_log = Path(incident_dir) / DRIFT_FILE
    gate = check_environment(report, candidate, candidate_source)
    return GuardedModule(
        candidate,
        reference,
        report,
        shadow_rate=float(shadow_rate),
        on_mismatch=on_mismatch,
        incident_dir=Path(incident_dir) if incident_dir is not None else None,
        on_incident=on_incident,
        seed=seed,
        environment=gate,
        on_environment_change=on_environment_change,
        report_path=report_path,
        drift_log=Path(drift_log) if drift_log is not None else None,
        drift_window_s=drift_window_s,
    )
