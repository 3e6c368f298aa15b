"""``kernelproof recheck``: re-prove exactly the verdicts an environment change invalidated.

Given a results store or a folder of reports, every verdict's latest proof is compared with
this environment by the one rule (:mod:`kernelproof.schema.environment_rule`): the candidate's
and the task's sources as they are now on disk, this machine's toolchain and hardware, and the
thread count (the proof's own, or ``--threads``). An invalidated verdict is verified again with
its original settings and base seed, through one warm :class:`~kernelproof.Session` (or Ray
actors), and the new verdict is kept beside the old one, never over it:

- in a store, as a verification of a new run (labelled ``recheck``) with a
  :class:`~kernelproof.store.results.Recheck` link to the row it re-proves;
- in a folder, as ``<name>.recheck-<environment digest>.json`` next to ``<name>.json``.

Each result is kept the moment it lands, so an interrupted recheck loses nothing: run the same
command again and what was re-proved in this environment is reported, not redone (its latest
proof now holds here). A re-proof carries a :class:`~kernelproof.schema.recheck.RecheckOrigin`
naming the verdict it replaces and why, which is how a later recheck still reports a kernel
that lost its verdict until it is fixed and verified again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from kernelproof.config import Settings, resolve_settings
from kernelproof.controller.environment import collect_environment
from kernelproof.errors import KernelproofError, UsageError
from kernelproof.proof.probe import matrix_thread_count
from kernelproof.proof.verdicts import speed_change, verdict_change, verdict_snapshot
from kernelproof.schema.binding import environment_fingerprint, report_fingerprint
from kernelproof.schema.environment_rule import (
    BINDING_COMPONENTS,
    EnvironmentDiff,
    diff_fingerprints,
)
from kernelproof.schema.fingerprint import EnvironmentFingerprint
from kernelproof.schema.recheck import (
    RecheckItem,
    RecheckOrigin,
    RecheckReport,
    RecheckStatus,
)
from kernelproof.schema.report import Environment, Report
from kernelproof.store.results import ResultsStore, RunStatus
from kernelproof.suite.executors import Executor, LocalPool, RayCluster, VerifyCall
from kernelproof.workers.pair import worker_threads

__all__ = ["RECHECK_INFIX", "RecheckOptions", "recheck", "recheck_settings"]

#: Between a report's stem and the environment digest in the name of its re-proof.
RECHECK_INFIX = ".recheck-"

#: Settings that take the verifier's walls down (the OS sandbox; the in-process probes and
#: audit hooks), with the value that does. Reports are plain JSON anyone can edit: a report
#: that carries one would have ``recheck`` run the candidate outside the sandbox on the CI
#: machine that trusts it. A re-proof puts the walls back (and says so) unless the user
#: vouches for the reports with ``--trust-settings``.
WALL_SETTINGS: dict[str, object] = {
    "sandbox": False,
    "insecure_sandbox": True,
    "integrity_probes": False,
}


@dataclass(frozen=True)
class RecheckOptions:
    """What to recheck, and how."""

    source: Path | None = None
    """A folder of reports (searched recursively) or one report; ``None``: the store."""

    db_url: str | None = None
    run: str | None = None
    """Only the verdicts of this bench run (store only)."""

    task: str | None = None
    """Only this task key (store only)."""

    threads: int | None = None
    """The thread count the kernels now run at: verdicts proved at another count (other than
    1) are invalidated and re-proved at this one."""

    everything: bool = False
    """Re-prove every verdict with any difference, annotations included."""

    trust_settings: bool = False
    """Apply a report's settings even where they take the verifier's walls down
    (:data:`WALL_SETTINGS`); by default a re-proof runs with them up."""

    dry_run: bool = False
    """Say what would be re-proved; verify nothing."""

    jobs: int = 1
    ray: str | None = None
    label: str | None = None


@dataclass
class _Proof:
    """One verdict's latest proof, and where its re-proof goes."""

    key: str
    head: Report
    where: str
    base: Path | None = None
    """The folder relative source paths may be relative to (a report's own folder)."""

    original_file: Path | None = None
    head_id: int | None = None
    slot: tuple[str, int | None, str, int] | None = None
    """Store only: task key, level, problem, sample."""

    settings: dict[str, Any] = field(default_factory=dict)
    paths: tuple[Path, Path] | None = None
    """The task and candidate files found now (None when one is missing)."""


def recheck(options: RecheckOptions, console: Console | None = None) -> RecheckReport:
    """Recheck a store or a folder (see the module's docstring). Raises :class:`UsageError`
    for a source that cannot be read; every verdict's own trouble is an item's ``failed``."""
    console = console or Console()
    started = _utc_now()
    store = None
    if options.source is not None:
        if options.run is not None or options.task is not None:
            raise UsageError(
                "--run and --task select verdicts of a results store; with a "
                "folder of reports, pass the folder (or one report) alone"
            )
        proofs, skipped = _folder_proofs(options.source)
        source = str(options.source)
    else:
        store = ResultsStore(options.db_url, must_exist=True)
        proofs, skipped = _store_proofs(store, options), []
        source = repr(store)
    report = RecheckReport(
        source=source,
        everything=options.everything,
        dry_run=options.dry_run,
        started_utc=started,
        skipped=skipped,
        environment=_machine_components(),
    )
    try:
        queue = [
            (proof, item)
            for proof in proofs
            for item in [_judge(proof, options, report)]
            if item is not None
        ]
        if queue and not options.dry_run:
            _reprove(queue, options, store, report, console)
        else:
            for _proof, item in queue:
                report.items.append(item.model_copy(update={"status": RecheckStatus.PENDING}))
    finally:
        if store is not None:
            store.close()
    order = {proof.key: index for index, proof in enumerate(proofs)}
    report.items.sort(key=lambda item: order[item.key])
    report.finished_utc = _utc_now()
    return report


def recheck_settings(
    report: Report, threads: int | None, trust: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """The settings a re-proof runs with: the report's own (every recorded field), its base
    seed, and ``threads`` when given; with the verifier's walls up unless ``trust``. Also the
    walls the report had down (``sandbox=False``...), put back."""
    settings = {k: v for k, v in report.settings.items() if k in Settings.model_fields}
    if report.correctness is not None:
        settings["base_seed"] = report.correctness.base_seed
    if threads is not None:
        settings["threads"] = threads
    lowered = [f"{k}={v!r}" for k, v in WALL_SETTINGS.items() if settings.get(k) == v]
    if lowered and not trust:
        for key in WALL_SETTINGS:
            settings.pop(key, None)  # the defaults: every wall up
    return settings, ([] if trust else lowered)


# -- finding the proofs -----------------------------------------------------------------------


def _folder_proofs(root: Path) -> tuple[list[_Proof], list[str]]:
    if not root.exists():
        raise UsageError(
            f"{root} does not exist; pass a folder of reports written by "
            "`kernelproof verify --json` (or one such report), or no argument to "
            "recheck the results store"
        )
    if root.is_file():
        files = [root, *sorted(root.parent.glob(f"{root.stem}{RECHECK_INFIX}*.json"))]
    else:
        files = sorted(root.rglob("*.json"))
    originals: dict[Path, Report] = {}
    rechecks: dict[Path, list[tuple[Path, Report]]] = {}
    skipped = []
    for path in files:
        try:
            report = Report.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError) as exc:
            skipped.append(f"{path}: not a kernelproof report ({_first_problem(exc)})")
            continue
        if RECHECK_INFIX in path.name:
            stem = path.name.split(RECHECK_INFIX)[0]
            rechecks.setdefault(path.with_name(f"{stem}.json"), []).append((path, report))
        else:
            originals[path] = report
    proofs = []
    for path, original in originals.items():
        later = sorted(
            rechecks.get(path, []),
            key=lambda item: item[1].recheck.rechecked_utc if item[1].recheck else "",
        )
        where, head = (str(later[-1][0]), later[-1][1]) if later else (str(path), original)
        proofs.append(
            _Proof(key=str(path), head=head, where=where, base=path.parent, original_file=path)
        )
    if not proofs and not skipped:
        raise UsageError(
            f"{root} holds no kernelproof report (*.json written by `kernelproof verify --json`)"
        )
    return proofs, skipped


def _store_proofs(store: ResultsStore, options: RecheckOptions) -> list[_Proof]:
    run_id = store.resolve_run(options.run).id if options.run is not None else None
    proofs = []
    for slot in store.proof_heads(run_id=run_id, task_key=options.task):
        row = slot.head
        proofs.append(
            _Proof(
                key=f"{row.task_key}#{row.sample}",
                head=store.report(row.id),
                where=f"verification {row.id} (run {row.run_id})",
                head_id=row.id,
                slot=(row.task_key, row.level, row.problem, row.sample),
            )
        )
    if not proofs:
        scope = f" of run {options.run}" if options.run is not None else ""
        scope += f" for task {options.task}" if options.task is not None else ""
        raise UsageError(
            f"no verifications{scope} in {store!r}; run `kernelproof bench` "
            "first, or check --run and --task"
        )
    return proofs


# -- judging each proof -----------------------------------------------------------------------


class _ItemIdentity(TypedDict):
    """The fields that name a proof, shared by every item ``_judge`` makes for it."""

    key: str
    candidate: str | None
    task: str | None


def _judge(proof: _Proof, options: RecheckOptions, report: RecheckReport) -> RecheckItem | None:
    """Decide one proof. A proof that needs no re-proof (still valid, re-proved here earlier)
    or cannot have one (its source is gone) gets its item in ``report`` now, and ``None`` is
    returned; an invalidated one returns its pending item, to be re-proved."""
    head = proof.head
    before = verdict_snapshot(head, proof.where)
    common = _ItemIdentity(
        key=proof.key,
        candidate=head.candidate.path if head.candidate else None,
        task=head.reference.path if head.reference else None,
    )
    try:
        proof.settings, lowered = recheck_settings(head, options.threads, options.trust_settings)
        current, note, unable = _current_fingerprint(proof)
        if lowered:
            note = "; ".join(
                filter(
                    None,
                    [
                        note,
                        (
                            f"the report's settings take the verifier's walls down ({', '.join(lowered)}): "
                            "re-proved with them up (reports are editable JSON; --trust-settings applies "
                            "them)"
                        ),
                    ],
                )
            )
    except KernelproofError as exc:
        report.items.append(
            RecheckItem(
                **common,
                status=RecheckStatus.FAILED,
                diff=EnvironmentDiff(),
                before=before,
                message=str(exc),
            )
        )
        return None
    diff = diff_fingerprints(report_fingerprint(head), current, everything=options.everything)
    if not diff.invalidated:
        if head.recheck is not None:  # re-proved here earlier: report what it gave
            after = before
            earlier = head.recheck.original
            report.items.append(
                RecheckItem(
                    **common,
                    status=RecheckStatus.REVERIFIED_EARLIER,
                    diff=EnvironmentDiff(changes=head.recheck.invalidated_by),
                    before=earlier,
                    after=after,
                    verdict_change=verdict_change(earlier.verdict, after.verdict),
                    speed_change=speed_change(earlier, after),
                    message=note,
                )
            )
        else:
            report.items.append(
                RecheckItem(
                    **common,
                    status=RecheckStatus.STILL_VALID,
                    diff=diff,
                    before=before,
                    message=note,
                )
            )
        return None
    if unable:
        report.items.append(
            RecheckItem(
                **common, status=RecheckStatus.FAILED, diff=diff, before=before, message=unable
            )
        )
        return None
    return RecheckItem(
        **common, status=RecheckStatus.PENDING, diff=diff, before=before, message=note
    )


def _current_fingerprint(proof: _Proof) -> tuple[EnvironmentFingerprint, str, str]:
    """This environment for ``proof``: this machine at the re-proof's settings, and its sources
    as they are on disk now (found into ``proof.paths``). Also a note on what is missing, and
    why a re-proof cannot run here (empty when it can)."""
    head = proof.head
    settings = resolve_settings(overrides=proof.settings)
    environment = _environment(settings)
    notes = []
    found: list[Path | None] = []
    hashes: list[str | None] = []
    for label, artifact in (("task", head.reference), ("candidate", head.candidate)):
        path = _locate(artifact.path, proof.base) if artifact is not None else None
        found.append(path)
        hashes.append(_sha256(path) if path is not None else None)
        if path is None:
            recorded = artifact.path if artifact is not None else "(unrecorded)"
            notes.append(
                f"the {label} file {recorded} is not found here (looked in the "
                f"current folder{' and beside the report' if proof.base else ''})"
            )
    unable = "; ".join(notes)
    if found[0] is not None and found[1] is not None:
        proof.paths = (found[0], found[1])
    if settings.device == "cuda" and environment.gpu is None:
        unable = "no CUDA device here: recheck a CUDA verdict on a machine with one"
    fingerprint = environment_fingerprint(
        environment,
        candidate_sha256=hashes[1],
        task_sha256=hashes[0],
        settings=head.settings,
        languages=head.code.languages if head.code else None,
    )
    return fingerprint, "; ".join(notes), unable


_ENVIRONMENTS: dict[tuple[str, int | None, int | None], Environment] = {}


def _environment(settings: Settings) -> Environment:
    key = (
        settings.device,
        worker_threads(settings),
        matrix_thread_count(settings.device, settings.threads),
    )
    if key not in _ENVIRONMENTS:
        _ENVIRONMENTS[key] = collect_environment(*key)
    return _ENVIRONMENTS[key]


def _machine_components() -> dict[str, str]:
    """This machine's software and hardware components, for the report's header."""
    default = resolve_settings()
    return environment_fingerprint(_environment(default)).components


# -- re-proving -------------------------------------------------------------------------------


def _reprove(
    queue: list[tuple[_Proof, RecheckItem]],
    options: RecheckOptions,
    store: ResultsStore | None,
    report: RecheckReport,
    console: Console,
) -> None:
    calls = []
    for proof, item in queue:
        assert proof.paths is not None
        task, candidate = proof.paths
        calls.append(
            ((proof, item), VerifyCall(str(task), str(candidate), "default", dict(proof.settings)))
        )
    done: set[str] = set()
    run_id: int | None = None
    executor = _executor(options, store, _device(queue))
    console.print(
        f"re-proving {len(calls)} invalidated verdict(s) ({len(report.items)} need nothing)"
    )
    try:
        for (proof, item), new in executor.results(calls):
            origin = RecheckOrigin(
                original=item.before,
                invalidated_by=item.diff.invalidating,
                rechecked_utc=_utc_now(),
            )
            new = new.model_copy(update={"recheck": origin})
            where, run_id = _keep(proof, new, item, store, run_id, options)
            after = verdict_snapshot(new, where)
            report.items.append(
                item.model_copy(
                    update={
                        "status": RecheckStatus.REVERIFIED,
                        "after": after,
                        "verdict_change": verdict_change(item.before.verdict, new.verdict),
                        "speed_change": speed_change(item.before, after),
                    }
                )
            )
            done.add(proof.key)
            console.print(
                f"{escape(proof.key)}: {item.before.verdict.value} -> "
                f"{new.verdict.value} ({escape(where)})"
            )
    except KeyboardInterrupt:
        executor.cancel()
        report.interrupted = True
        console.print(
            "[yellow]interrupted: every re-proof finished so far is kept; run the "
            "same command again to resume[/]"
        )
    finally:
        if store is not None and run_id is not None:
            store.finish_run(
                run_id, RunStatus.INTERRUPTED if report.interrupted else RunStatus.FINISHED
            )
    for proof, item in queue:
        if proof.key not in done:
            report.items.append(item)


def _device(queue: list[tuple[_Proof, RecheckItem]]) -> str:
    """``cuda`` when any re-proof runs on CUDA (Ray then reserves GPUs), else ``cpu``."""
    return "cuda" if any(p.settings.get("device") == "cuda" for p, _ in queue) else "cpu"


def _executor(options: RecheckOptions, store: ResultsStore | None, device: str) -> Executor:
    """The bench's executors: one warm Session in this process, or Ray actors with theirs."""
    store_url = store.url if store is not None else None
    if options.ray:
        local = options.ray == "local"
        return RayCluster(
            address=None if local else options.ray,
            device=device,
            num_cpus=options.jobs if local else None,
            store_url=store_url
            if local or (store_url and not store_url.startswith("sqlite"))
            else None,
        )
    return LocalPool(jobs=options.jobs, store_url=store_url)


def _keep(
    proof: _Proof,
    new: Report,
    item: RecheckItem,
    store: ResultsStore | None,
    run_id: int | None,
    options: RecheckOptions,
) -> tuple[str, int | None]:
    """Store the re-proof beside the proof it replaces; where it went, and the recheck run."""
    if store is None:
        assert proof.original_file is not None
        path = _free_name(proof.original_file, _digest(new))
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(new.to_json() + "\n", encoding="utf-8")
        partial.replace(path)  # whole or not at all: a resumed recheck never reads half a file
        return str(path), run_id
    assert proof.slot is not None and proof.head_id is not None
    if run_id is None:
        run_id = store.start_run(
            suite=f"recheck of {store!r}",
            solutions="",
            settings={
                "recheck": {
                    "threads": options.threads,
                    "all": options.everything,
                    "run": options.run,
                    "task": options.task,
                },
                "environment": report_fingerprint(new).components,
            },
            fingerprint=new.environment.fingerprint,
            device=new.environment.device,
            label=options.label or "recheck",
        )
    task_key, level, problem, sample = proof.slot
    new_id = store.add(run_id, task_key, level, problem, sample, new)
    store.link_recheck(
        run_id,
        proof.head_id,
        new_id,
        [change.model_dump(mode="json") for change in item.diff.invalidating],
    )
    return f"verification {new_id} (run {run_id})", run_id


def _free_name(original: Path, digest: str) -> Path:
    """``<stem>.recheck-<digest>.json`` beside the original; never an existing file's name."""
    path = original.with_name(f"{original.stem}{RECHECK_INFIX}{digest}.json")
    number = 2
    while path.exists():
        path = original.with_name(f"{original.stem}{RECHECK_INFIX}{digest}-{number}.json")
        number += 1
    return path


# -- helpers ----------------------------------------------------------------------------------


def _locate(recorded: str, base: Path | None) -> Path | None:
    """A recorded source path as it is found now: absolute, relative to the current folder, or
    relative to the report's own folder."""
    path = Path(recorded)
    candidates = (
        [path]
        if path.is_absolute()
        else [Path.cwd() / path] + ([base / path] if base is not None else [])
    )
    return next((c for c in candidates if c.is_file()), None)


def _sha256(path: Path) -> str | None:
    """The hash ``verify`` records (of the file's text), or None when it cannot be read."""
    try:
        return hashlib.sha256(path.read_text(encoding="utf-8").encode()).hexdigest()
    except (OSError, UnicodeDecodeError):
        return None


def _digest(report: Report) -> str:
    return report_fingerprint(report).digest(BINDING_COMPONENTS)


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "the top level"
        return f"{exc.error_count()} problem(s); first at {where}: {problem['msg']}"
    return str(getattr(exc, "strerror", None) or exc)[:200]


def _utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
