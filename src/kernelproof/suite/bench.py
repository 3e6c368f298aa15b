"""``kernelproof bench``: verify every solution of a suite, store each result as it lands.

Every verification is committed to the store on its own, the moment it finishes, so a crash,
a ``kill -9`` or Ctrl-C loses nothing already stored. A re-run skips what the store already
holds for the same candidate, reference, machine and settings (resume).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from kernelproof.config import resolve_settings
from kernelproof.errors import KernelproofError
from kernelproof.schema import Report
from kernelproof.schema.suite import BenchItem, BenchOutcome
from kernelproof.store.metrics import summarize
from kernelproof.store.results import ResultsStore, RunStatus, settings_hash
from kernelproof.suite.executors import Executor, LocalPool, RayCluster, verify_call
from kernelproof.suite.layout import bench_items, read_suite


@dataclass(frozen=True)
class BenchOptions:
    jobs: int = 1
    ray: str | None = None
    """None: the local pool. ``"local"``: start a local Ray cluster. Otherwise an address."""

    db_url: str | None = None
    profile: str = "default"
    overrides: dict[str, Any] = field(default_factory=dict)
    resume: bool = True
    packets: Path | None = None
    """Folder for each verification's JSON report and HTML packet."""

    label: str | None = None


def run_bench(
    suite: Path, solutions: Path, options: BenchOptions, console: Console | None = None
) -> BenchOutcome:
    """Run the suite. Ctrl-C stops it cleanly: finished results stay stored."""
    console = console or Console()
    started = time.monotonic()
    layout, tasks = read_suite(suite, solutions)
    items = bench_items(tasks)
    base = resolve_settings(profile=options.profile, overrides=options.overrides)
    fingerprint = _fingerprint(base.device)
    store = ResultsStore(options.db_url)
    run_id = store.start_run(
        suite=suite.resolve(),
        solutions=solutions.resolve(),
        settings=base.model_dump(mode="json"),
        fingerprint=fingerprint,
        device=base.device,
        label=options.label,
    )
    outcome = BenchOutcome(
        run_id=run_id, layout=layout, tasks=tasks, summary=summarize([], total_tasks=len(tasks))
    )
    pending = []
    for item in items:
        done = _stored(store, item, options, fingerprint) if options.resume else None
        if done is not None:
            store.reuse(
                run_id, done, item.task.key, item.task.level, item.task.problem, item.sample
            )
            outcome.resumed += 1
        else:
            pending.append((item, verify_call(item, options.profile, options.overrides)))
    executor: Executor = (
        RayCluster(
            address=None if options.ray == "local" else options.ray,
            device=base.device,
            num_cpus=options.jobs if options.ray == "local" else None,
            store_url=store.url
            if options.ray == "local" or not store.url.startswith("sqlite")
            else None,
        )
        if options.ray
        else LocalPool(jobs=options.jobs, store_url=store.url)
    )
    status = RunStatus.FINISHED
    with _progress(console) as progress:
        bar = progress.add_task("verifying", total=len(pending))
        try:
            for item, report in executor.results(pending):
                store.add(
                    run_id, item.task.key, item.task.level, item.task.problem, item.sample, report
                )
                outcome.reports.append((item, report))
                if options.packets is not None:
                    _write_packet(options.packets, item, report)
                progress.update(
                    bar, advance=1, description=f"{item.task.key}: {report.verdict.value}"
                )
        except KeyboardInterrupt:
            executor.cancel()
            status = RunStatus.INTERRUPTED
            outcome.interrupted = True
            console.print(
                "[yellow]interrupted: everything finished so far is stored; "
                "rerun the same command to resume[/]"
            )
    store.finish_run(run_id, status)
    outcome.summary = summarize(store.records(run_id), total_tasks=len(tasks))
    outcome.wall_s = time.monotonic() - started
    store.close()
    return outcome


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


def _stored(store: ResultsStore, item: BenchItem, options: BenchOptions, fingerprint: str) -> Any:
    """The stored verification of this exact candidate, reference, machine and settings."""
    from kernelproof.tasks.formats import load_task

    try:
        with tempfile.TemporaryDirectory(prefix="kernelproof-resume-") as scratch:
            loaded = load_task(item.task.reference, item.candidate, Path(scratch))
        settings = resolve_settings(
            profile=options.profile, task_policy=loaded.task.policy, overrides=options.overrides
        )
    except (KernelproofError, OSError):
        return None  # a bad task or candidate is verified (and reported) again
    return store.find_done(
        hashlib.sha256(loaded.candidate_text.encode()).hexdigest(),
        loaded.task.sha256,
        fingerprint,
        settings_hash(settings.model_dump(mode="json")),
    )


def _fingerprint(device: str) -> str:
    from kernelproof.roofline import machine_fingerprint

    return machine_fingerprint(device)


def _write_packet(folder: Path, item: BenchItem, report: Report) -> None:
    from kernelproof.report.files import write_html, write_json

    name = f"{item.task.key.replace('/', '__')}__{item.candidate.stem}"
    write_json(report, folder / f"{name}.json")
    write_html(report, folder / f"{name}.html")
