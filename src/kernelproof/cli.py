"""The ``kernelproof`` command line. It parses arguments and calls library functions, nothing more."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.markup import escape
from rich.text import Text

from kernelproof.cli_options import (
    DB_OPTION,
    DEVICE_OPTION,
    POLICY_SETTINGS,
    PROFILE_OPTION,
    review_output_options,
    setting_options,
)
from kernelproof.config import SettingsOverrides
from kernelproof.errors import KernelproofError, UsageError
from kernelproof.report.terminal import report_console
from kernelproof.schema import ExitCode

console = report_console()

PATH = click.Path(path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kernelproof")
def app() -> None:
    """Verify and benchmark AI-written kernels against a trusted PyTorch reference."""


@app.command()
@click.argument("reference", type=PATH)
@click.argument("candidate", type=PATH)
@setting_options(
    *POLICY_SETTINGS,
    "seeds",
    "base_seed",
    "budget_s",
    "timing",
    "stress_shapes",
    "threads",
    "hot",
    "cache_flush",
    "compile_baseline",
    "cuda_graphs",
    "default_knobs",
    "input_seeds",
    "shrink",
    "inputs_file",
    "fail_fast",
)
@PROFILE_OPTION
@click.option("--json", "json_path", type=PATH, default=None, help="Write the JSON report here.")
@review_output_options
@click.option(
    "--no-warm",
    is_flag=True,
    help="Verify in this process even when `kernelproof warm` is running.",
)
def verify(
    reference: Path,
    candidate: Path,
    overrides: SettingsOverrides,
    profile: str,
    json_path: Path | None,
    html_path: Path | None,
    junit_path: Path | None,
    sarif_path: Path | None,
    no_warm: bool,
) -> None:
    """Verify CANDIDATE against REFERENCE. The exit code is the verdict's:
    0 verified, 1 incorrect, 2 suspect, 3 broken, 4 error. Runs in the warm verifier when
    `kernelproof warm` is running (unless --no-warm)."""
    report = None if no_warm else _verify_warm(reference, candidate, profile, overrides)
    if report is None:
        from kernelproof.controller.verify import verify as run_verify

        report = run_verify(reference, candidate, profile=profile, **overrides)
    _present(
        report,
        json_path=json_path,
        html_path=html_path,
        junit_path=junit_path,
        sarif_path=sarif_path,
    )
    sys.exit(int(report.verdict.exit_code))


def _verify_warm(
    reference: Path, candidate: Path, profile: str, overrides: SettingsOverrides
) -> Any:
    """The report from the warm verifier, or None when none is running (checked before
    anything imports torch: that import is most of this command's start-up)."""
    from kernelproof import warm
    from kernelproof.schema import Report

    try:
        text, pid = warm.verify_remotely(reference, candidate, profile, overrides)
    except warm.WarmUnavailable:
        return None
    click.echo(
        f"verified by the warm verifier (pid {pid}); --no-warm verifies in this process", err=True
    )
    return Report.model_validate_json(text)


@app.command(name="warm")
@click.option("--stop", "stop_it", is_flag=True, help="Stop the running warm verifier.")
@click.option(
    "--idle-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds without a request after which it stops itself (default 1800).",
)
def warm_command(stop_it: bool, idle_timeout: float | None) -> None:
    """Start a warm verifier for this user in the background: `verify` then runs in it (its
    torch, forkserver and reference workers already started). --stop stops it."""
    from kernelproof import warm

    if stop_it:
        stopped = warm.stop()
        console.print("stopped the warm verifier" if stopped else "no warm verifier was running")
        return
    try:
        pid = warm.start(idle_timeout or warm.DEFAULT_IDLE_TIMEOUT_S)
    except RuntimeError as exc:
        console.print(f"error: {escape(str(exc))}")
        sys.exit(int(ExitCode.ERROR))
    console.print(
        f"warm verifier running (pid {pid}), listening on "
        f"{escape(str(warm.socket_path()))}; `kernelproof warm --stop` stops it"
    )


def _audit_warm(
    reference: Path, seeds: int | None, seed: int | None, profile: str, settings: SettingsOverrides
) -> Any:
    """The adequacy audit from the warm verifier, or None when none is running."""
    from kernelproof import warm
    from kernelproof.schema import AdequacyReport

    try:
        text, pid = warm.audit_remotely(reference, seeds, seed, profile, settings)
    except warm.WarmUnavailable:
        return None
    click.echo(
        f"audited by the warm verifier (pid {pid}); --no-warm audits in this process", err=True
    )
    return AdequacyReport.model_validate_json(text)


@app.command("e2e")
@click.argument("host", type=PATH)
@click.option(
    "--replace",
    "replacements",
    multiple=True,
    required=True,
    metavar="TARGET=CANDIDATE[:TASK]",
    help="Replace a submodule path (layers.0.norm) or every instance of a module "
    "class (RMSNorm) by CANDIDATE's ModelNew; TASK, when given, is the task of "
    "the isolated check. Repeatable.",
)
@click.option(
    "--soak",
    type=click.IntRange(min=0),
    default=0,
    metavar="STEPS",
    help="Also run STEPS steps of the host's loop (its soak_steps, else fresh "
    "inputs) and watch memory, drift, nondeterminism and latency.",
)
@setting_options(
    *POLICY_SETTINGS,
    "seeds",
    "base_seed",
    "budget_s",
    "timing",
    "threads",
    "default_knobs",
    "input_seeds",
    "shrink",
    "compile_baseline",
)
@PROFILE_OPTION
@click.option("--json", "json_path", type=PATH, default=None, help="Write the JSON report here.")
@click.option("--html", "html_path", type=PATH, default=None, help="Write the HTML packet here.")
def e2e_command(
    host: Path,
    replacements: tuple[str, ...],
    soak: int,
    overrides: SettingsOverrides,
    profile: str,
    json_path: Path | None,
    html_path: Path | None,
) -> None:
    """Verify kernels inside the HOST model that will run them (a KernelBench task file), and
    soak them over its loop. Exit code as for verify: 0 verified, 1 incorrect, 2 suspect,
    3 broken, 4 error."""
    from kernelproof.e2e.run import e2e

    report = e2e(host, list(replacements), soak=soak, profile=profile, **overrides)
    _present(report, json_path=json_path, html_path=html_path)
    sys.exit(int(report.verdict.exit_code))


@app.command("report")
@click.argument("report_path", metavar="REPORT.json", type=PATH)
@review_output_options
def report_command(
    report_path: Path, html_path: Path | None, junit_path: Path | None, sarif_path: Path | None
) -> None:
    """Print the summary of a JSON report written by `verify --json` and render it again as
    an HTML packet, JUnit XML or SARIF. Exit code 0, or 4 when the file is not a report."""
    from kernelproof.report.files import read_json

    try:
        report = read_json(report_path)
    except KernelproofError as exc:
        console.print(Text.assemble(("error: ", "red"), str(exc)))
        sys.exit(int(ExitCode.ERROR))
    _present(report, html_path=html_path, junit_path=junit_path, sarif_path=sarif_path)


def _present(report: Any, **paths: Path | None) -> None:
    """Print the terminal summary, write the requested files, and annotate located findings
    when running in GitHub Actions (workflow commands go to stdout verbatim)."""
    from kernelproof.report.files import write_outputs
    from kernelproof.report.github import running_on_github, workflow_commands
    from kernelproof.report.terminal import render_report

    render_report(report, console)
    for path in write_outputs(report, **paths):
        console.print(Text(f"wrote {path}"))
    if running_on_github():
        for line in workflow_commands(report):
            click.echo(line)


@app.command("audit-task")
@click.argument("reference", type=PATH)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Seeds to audit at the default shape (default 3).",
)
@click.option("--seed", type=int, default=None, help="Base seed: reproduces an earlier run.")
@click.option("--json", "json_path", type=PATH, default=None, help="Write the JSON audit here.")
@setting_options("device", "dtype", "atol", "rtol", "threads")
@PROFILE_OPTION
@click.option(
    "--no-warm", is_flag=True, help="Audit in this process even when `kernelproof warm` is running."
)
def audit_task(
    reference: Path,
    seeds: int | None,
    seed: int | None,
    json_path: Path | None,
    overrides: SettingsOverrides,
    profile: str,
    no_warm: bool,
) -> None:
    """Audit whether REFERENCE's comparator rejects wrong answers (zeros, a constant, the
    input passed through, a bf16 round trip, a 1% perturbation) and accepts rounding noise.
    Exit code: 0 adequate, 1 degenerate or too tight, 4 error."""
    from rich.text import Text

    from kernelproof.errors import KernelproofError
    from kernelproof.report.adequacy import render_adequacy
    from kernelproof.schema import AuditExitCode

    try:
        report = None if no_warm else _audit_warm(reference, seeds, seed, profile, overrides)
        if report is None:
            from kernelproof.controller.audit_task import DEFAULT_SEEDS
            from kernelproof.controller.audit_task import audit_task as run_audit

            settings: dict[str, Any] = dict(overrides)  # seeds are audit-task's own flags
            report = run_audit(
                reference, seeds=seeds or DEFAULT_SEEDS, base_seed=seed, profile=profile, **settings
            )
    except KernelproofError as exc:
        console.print(Text.assemble(("error: ", "red"), str(exc)))
        sys.exit(int(AuditExitCode.ERROR))
    render_adequacy(report, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(report.to_json() + "\n", encoding="utf-8")
        console.print(f"wrote {json_path}")
    sys.exit(int(report.exit_code))


@app.command()
@DEVICE_OPTION
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Threads to calibrate with (default on CPU: 1, as verify uses).",
)
@click.option("--force", is_flag=True, help="Measure again even if this machine is cached.")
def calibrate(device: str | None, threads: int | None, force: bool) -> None:
    """Measure this machine's memory bandwidth and matmul throughput; cache them per machine."""
    from kernelproof.config import resolve_settings
    from kernelproof.roofline import cache_dir
    from kernelproof.roofline import calibrate as run_calibration
    from kernelproof.workers.pair import worker_threads

    settings = resolve_settings(overrides={"device": device, "threads": threads})
    threads = worker_threads(settings)
    ceilings = run_calibration(settings.device, threads=threads, force=force)
    console.print(
        f"{settings.device} ({threads or 'default'} threads): "
        f"{ceilings.peak_bytes_per_s / 1e9:.1f} GB/s, "
        f"{ceilings.peak_flops / 1e9:.1f} GFLOP/s float32 matmul "
        f"({escape(ceilings.source)}), cached in {escape(str(cache_dir()))}"
    )


@app.command()
@DB_OPTION
@click.option(
    "--task", "task_key", default=None, metavar="KEY", help="Only this task, e.g. level1/3_Softmax."
)
@click.option("--candidate", default=None, help="Only this candidate: a sha256 prefix or its path.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Most verifications to show.",
)
def history(db_url: str | None, task_key: str | None, candidate: str | None, limit: int) -> None:
    """Show stored verifications, newest first. Exit code: 0, or 4 for a bad store."""
    from kernelproof.errors import KernelproofError
    from kernelproof.report.store_tables import render_history
    from kernelproof.store.results import ResultsStore

    try:
        store = ResultsStore(db_url, must_exist=True)
        rows = store.history(task_key=task_key, candidate=candidate, limit=limit)
        runs = {run.id: run for run in store.runs()}
    except KernelproofError as exc:
        _fail(exc)
    render_history(rows, runs, store.url, console)


@app.command()
@click.argument("sources", nargs=-1, metavar="RUN_A RUN_B | REPORT...")
@DB_OPTION
@click.option(
    "--candidate",
    default=None,
    metavar="SHA|PATH",
    help="Compare this candidate's stored verifications across machines (a sha256 "
    "prefix or its path), the latest per environment.",
)
@click.option(
    "--json", "json_path", type=PATH, default=None, help="Write the comparison here (JSON)."
)
def compare(
    sources: tuple[str, ...], db_url: str | None, candidate: str | None, json_path: Path | None
) -> None:
    """Compare run RUN_B against the earlier RUN_A, task by task (a regression is a task that
    lost its verified verdict, or whose speedup fell beyond both confidence intervals). Or,
    given report files or folders (or --candidate with a store), the same candidate on several
    machines side by side: verdict, speedup with its interval and %SOL per machine, what
    differs between the environments, and a flag for a kernel verified on one machine and not
    another, or fast on one and slow on another. Exit code: 0 no regression or flag,
    1 regressions or flags, 4 a bad run id, report or store."""
    from kernelproof.errors import KernelproofError
    from kernelproof.report.store_tables import render_comparison, render_machine_comparison
    from kernelproof.store.results import ResultsStore
    from kernelproof.suite.comparison import compare_runs

    try:
        if candidate is not None or (sources and all(Path(s).exists() for s in sources)):
            from kernelproof.suite.machine_comparison import compare_machines

            machines = compare_machines(_compared_reports(sources, db_url, candidate))
            render_machine_comparison(machines, console)
            if json_path is not None:
                json_path.parent.mkdir(parents=True, exist_ok=True)
                json_path.write_text(machines.model_dump_json(indent=2) + "\n")
            sys.exit(int(machines.exit_code))
        if len(sources) != 2:
            raise UsageError(
                f"compare takes two run ids (RUN_A RUN_B), or report files or "
                f"folders that exist, or --candidate; got {list(sources)!r}"
            )
        run_a, run_b = sources
        store = ResultsStore(db_url, must_exist=True)
        first, second = store.resolve_run(run_a), store.resolve_run(run_b)
        result = compare_runs(store.records(first.id), store.records(second.id))
    except KernelproofError as exc:
        _fail(exc)
    render_comparison(result, first, second, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(result.model_dump_json(indent=2) + "\n")
    sys.exit(int(result.exit_code))


def _compared_reports(
    sources: tuple[str, ...], db_url: str | None, candidate: str | None
) -> list[tuple[str, Any]]:
    """The reports ``compare`` lays side by side: files and folders' ``*.json``, or the store's
    latest verification of ``candidate`` per environment."""
    from kernelproof.report.files import read_json
    from kernelproof.store.results import ResultsStore

    if candidate is not None:
        if sources:
            raise UsageError("--candidate compares store rows; pass either it or report files")
        store = ResultsStore(db_url, must_exist=True)
        latest: dict[str, Any] = {}
        for row in store.history(candidate=candidate, limit=10_000):
            latest.setdefault(row.environment_digest or row.fingerprint, row)
        if not latest:
            raise UsageError(f"no stored verification of candidate {candidate!r} in {store!r}")
        return [
            (f"verification {row.id} (run {row.run_id})", store.report(row.id))
            for row in latest.values()
        ]
    reports = []
    for source in map(Path, sources):
        if not source.is_dir():
            reports.append((str(source), read_json(source)))
            continue
        for path in sorted(source.rglob("*.json")):
            try:
                reports.append((str(path), read_json(path)))
            except KernelproofError as exc:  # a folder may hold other JSON: say so, go on
                console.print(f"[yellow]skipped:[/yellow] {escape(str(exc))}")
    return reports


@app.command()
@click.argument("source", type=PATH, required=False)
@DB_OPTION
@click.option(
    "--run",
    "run_id",
    default=None,
    metavar="ID",
    help="Only the verdicts of this bench run (a store).",
)
@click.option(
    "--task",
    "task_key",
    default=None,
    metavar="KEY",
    help="Only this task, e.g. level1/3_Softmax (a store).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="The thread count the kernels now run at: verdicts proved at another "
    "count (other than 1) are re-proved at this one.",
)
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Re-prove on any difference, annotations included (a new kernelproof).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be re-proved; verify nothing.")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Re-proofs in flight at once.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    help="Re-prove on Ray: alone, start a local cluster; with an ADDRESS, join it.",
)
@click.option(
    "--trust-settings",
    is_flag=True,
    help="Apply a report's settings even where they take the verifier's walls down "
    "(sandbox=False, integrity_probes=False); by default they are put back up.",
)
@click.option("--label", default=None, help="A name for the recheck's run in the store.")
@click.option(
    "--json", "json_path", type=PATH, default=None, help="Write the change report here (JSON)."
)
@click.option(
    "--html", "html_path", type=PATH, default=None, help="Write the change report here (HTML)."
)
def recheck(
    source: Path | None,
    db_url: str | None,
    run_id: str | None,
    task_key: str | None,
    threads: int | None,
    everything: bool,
    dry_run: bool,
    jobs: int,
    ray_address: str | None,
    trust_settings: bool,
    label: str | None,
    json_path: Path | None,
    html_path: Path | None,
) -> None:
    """Re-prove every verdict this environment invalidates: of the results store (--db), or
    of SOURCE, a folder of reports (or one report). New verdicts are kept beside the old ones;
    an interrupted recheck resumes when run again. Exit code: 0 every verified kernel still
    verified, 1 one lost its verdict, 4 bad input or a verdict that could not be re-proved,
    130 interrupted."""
    from kernelproof.report.recheck_html import write_recheck_html
    from kernelproof.report.recheck_text import render_recheck
    from kernelproof.suite.recheck import RecheckOptions
    from kernelproof.suite.recheck import recheck as run_recheck

    options = RecheckOptions(
        source=source,
        db_url=db_url,
        run=run_id,
        task=task_key,
        threads=threads,
        everything=everything,
        dry_run=dry_run,
        jobs=jobs,
        ray=ray_address,
        label=label,
        trust_settings=trust_settings,
    )
    try:
        report = run_recheck(options, console)
    except KernelproofError as exc:
        _fail(exc)
    render_recheck(report, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(report.to_json() + "\n", encoding="utf-8")
        console.print(Text(f"wrote {json_path}"))
    if html_path is not None:
        console.print(Text(f"wrote {write_recheck_html(report, html_path)}"))
    sys.exit(130 if report.interrupted else int(report.exit_code))


@app.group(name="guard")
def guard_group() -> None:
    """Read what a guard (kernelproof.guard) recorded in production: drift, and the shapes
    that extend the proof to it."""


@guard_group.command("report")
@click.argument("log", type=PATH)
@click.option(
    "--json", "json_path", type=PATH, default=None, help="Write the drift summary here (JSON)."
)
@click.option(
    "--html",
    "html_path",
    type=PATH,
    default=None,
    help="Write the drift view here (HTML: table, plot, shapes).",
)
def guard_report(log: Path, json_path: Path | None, html_path: Path | None) -> None:
    """Show how production calls drifted against the verified envelope: per signature
    dimension the share inside, near the edge and outside, window by window, and the values
    the matrix did not cover. LOG is the guard's incident_dir (or its drift_log). Exit code:
    0, or 4 for a log that cannot be read (damaged lines are named and skipped)."""
    from kernelproof.proof.drift_summary import summarise
    from kernelproof.proof.shape_extension import propose_shapes
    from kernelproof.report.drift_html import write_drift_html
    from kernelproof.report.drift_text import render_drift

    try:
        summary = summarise(log)
    except KernelproofError as exc:
        _fail(exc)
    render_drift(summary, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(summary.to_json() + "\n", encoding="utf-8")
        console.print(Text(f"wrote {json_path}"))
    if html_path is not None:
        proposals, refused = propose_shapes(summary)
        console.print(Text(f"wrote {write_drift_html(summary, proposals, refused, html_path)}"))


@guard_group.command("shapes")
@click.argument("log", type=PATH)
@click.option(
    "--task",
    "task_path",
    type=PATH,
    default=None,
    help="The task file to extend (default: the one the guard's report verified).",
)
@click.option(
    "--write",
    "write_task",
    is_flag=True,
    help="Add the shapes to the task's SHAPES in place (else print them).",
)
def guard_shapes(log: Path, task_path: Path | None, write_task: bool) -> None:
    """Turn the production signatures that fell outside the envelope into SHAPES entries of
    the task, so that the next verify covers them. Exit code: 0, or 4 for a log or task that
    cannot be read."""
    from kernelproof.proof.drift_summary import summarise
    from kernelproof.proof.shape_extension import propose_shapes, shapes_source, write_shapes
    from kernelproof.tasks.source import read_task

    try:
        summary = summarise(log)
        task = task_path or (Path(summary.reference_path) if summary.reference_path else None)
        if task is None:
            raise UsageError("the log names no task file; pass --task")
        existing = read_task(task).shapes
        proposals, refused = propose_shapes(summary, existing)
        for problem in summary.problems:
            console.print(f"[yellow]damaged log line:[/yellow] {escape(problem)}")
        for entry in refused:
            console.print(
                f"cannot be a shape: {escape(entry.signature)} x{entry.calls}: "
                f"{escape(entry.reason)}"
            )
        if not proposals:
            console.print(
                "no new shape: every call outside the envelope is listed above"
                if refused
                else "no call fell outside the envelope: nothing to add"
            )
            return
        if write_task:
            shapes = write_shapes(task, proposals)
            console.print(
                Text(
                    f"added {len(proposals)} shape(s) to {task} (SHAPES now has "
                    f"{len(shapes)}); verify it again to prove them"
                )
            )
        else:
            merged = [*existing, *[p.knobs for p in proposals]]
            click.echo(shapes_source(merged), nl=False)
            console.print(Text(f"{len(proposals)} new shape(s) for {task}; --write adds them"))
    except KernelproofError as exc:
        _fail(exc)


@app.command()
@click.argument("directory", type=PATH)
@click.option(
    "--replay",
    "which",
    default=None,
    metavar="N|ID|latest",
    help="Rerun one incident through verify: the saved inputs at the call's knobs.",
)
@click.option(
    "--json",
    "json_path",
    type=PATH,
    default=None,
    help="With --replay, write the replay's JSON report here.",
)
def incidents(directory: Path, which: str | None, json_path: Path | None) -> None:
    """List the incidents a guard wrote to DIRECTORY (kernelproof.guard's incident_dir), or
    replay one. Exit code: 0 for a listing; a replay's is its verdict's; 4 for a bad
    directory or incident."""
    from kernelproof.dispatch.incidents import (
        check_replayable,
        find_incident,
        read_incidents,
        replay_meaning,
    )
    from kernelproof.report.incidents import render_incidents

    try:
        found = read_incidents(directory)
        if which is None:
            render_incidents(found, directory, console)
            return
        folder, incident = find_incident(found, which)
        check_replayable(incident)  # before the verifier's machinery is loaded
        console.print(f"replaying {incident.describe()}")
        from kernelproof.controller.incident_replay import replay

        report = replay(folder, incident)
    except KernelproofError as exc:
        _fail(exc)
    _present(report, json_path=json_path)
    console.print(Text(f"replay: {replay_meaning(incident, report)}"))
    sys.exit(int(report.verdict.exit_code))


def _fail(exc: Exception) -> NoReturn:
    """Print a user error and exit with the ``error`` code (4)."""
    console.print(f"[red]error:[/red] {escape(str(exc))}")
    sys.exit(int(ExitCode.ERROR))


@app.command()
@click.argument("suite_dir", type=PATH)
@click.option("--solutions", type=PATH, required=True, help="Folder of candidate solutions.")
@DB_OPTION
@setting_options(*POLICY_SETTINGS, "budget_s", "seeds", "timing")
@PROFILE_OPTION
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Verifications in flight at once.",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    help="Run on Ray: alone, start a local cluster; with an ADDRESS, join it.",
)
@click.option("--no-resume", is_flag=True, help="Verify again what the store already holds.")
@click.option(
    "--packets",
    type=PATH,
    default=None,
    help="Write each verification's JSON report and HTML packet here.",
)
@click.option("--json", "json_path", type=PATH, default=None, help="Write the suite summary here.")
@click.option("--label", default=None, help="A name for this run in the store.")
def bench(
    suite_dir: Path,
    solutions: Path,
    db_url: str | None,
    overrides: SettingsOverrides,
    jobs: int,
    ray_address: str | None,
    profile: str,
    no_resume: bool,
    packets: Path | None,
    json_path: Path | None,
    label: str | None,
) -> None:
    """Verify every solution of SUITE_DIR, store the results, print the leaderboard. The
    policy options apply to every task, above each task's own POLICY, as in verify."""
    from kernelproof.report.leaderboard import render_leaderboard
    from kernelproof.suite.bench import BenchOptions, run_bench

    options = BenchOptions(
        jobs=jobs,
        ray=ray_address,
        db_url=db_url,
        profile=profile,
        overrides=dict(overrides),
        resume=not no_resume,
        packets=packets,
        label=label,
    )
    outcome = run_bench(suite_dir, solutions, options, console)
    render_leaderboard(outcome, console)
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(outcome.summary.to_json() + "\n")
        console.print(f"wrote {escape(str(json_path))}")
    sys.exit(130 if outcome.interrupted else 0)


@app.command()
@click.argument("suite_dir", type=PATH)
@DB_OPTION
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Beyond loopback only where the candidate sandbox "
    "is complete on this machine.",
)
@click.option("--port", type=click.IntRange(1, 65535), default=8600, show_default=True)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Workers draining the queue (0: none; another server's drain it).",
)
@click.option(
    "--ray",
    "ray_address",
    is_flag=False,
    flag_value="local",
    default=None,
    help="Workers as Ray actors: alone, start a local cluster; with an ADDRESS, join.",
)
@click.option(
    "--tokens",
    "tokens_path",
    type=PATH,
    required=True,
    help="The tokens file (`kernelproof token create NAME --tokens FILE`).",
)
@setting_options(*POLICY_SETTINGS, "budget_s", "seeds", "timing")
@PROFILE_OPTION
@click.option(
    "--max-source-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Largest source accepted (default 262144); larger ones get 413.",
)
@click.option(
    "--rate",
    "per_minute",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Submissions per token per minute (default 30).",
)
@click.option(
    "--burst",
    type=click.IntRange(min=1),
    default=None,
    help="Submissions a token may send at once (default 10).",
)
@click.option(
    "--max-queued",
    type=click.IntRange(min=1),
    default=None,
    help="Submissions per token queued or running at once (default 20).",
)
@click.option(
    "--private-code",
    is_flag=True,
    help="Show each packet's code section only to the token that submitted it.",
)
def serve(
    suite_dir: Path,
    db_url: str | None,
    host: str,
    port: int,
    workers: int,
    ray_address: str | None,
    tokens_path: Path,
    overrides: SettingsOverrides,
    profile: str,
    max_source_bytes: int | None,
    per_minute: float | None,
    burst: int | None,
    max_queued: int | None,
    private_code: bool,
) -> None:
    """Serve SUITE_DIR: submissions over HTTP (JSON API under /api), a queue in the results
    store drained by sandboxed workers, and pages with leaderboards, review packets, history
    and the queue."""
    from kernelproof.serve.launch import serve_from_cli

    limits = {
        "max_source_bytes": max_source_bytes,
        "submissions_per_minute": per_minute,
        "burst": burst,
        "max_queued_per_token": max_queued,
    }
    serve_from_cli(
        suite_dir,
        db_url=db_url,
        host=host,
        port=port,
        workers=workers,
        ray=ray_address,
        tokens=tokens_path,
        profile=profile,
        overrides=dict(overrides),
        limits={k: v for k, v in limits.items() if v is not None},
        private_code=private_code,
        console=console,
    )


@app.command("mcp")
@click.argument("tasks", nargs=-1, type=PATH)
@PROFILE_OPTION
@click.option(
    "--budget",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    help="Timing budget of the bench tool, seconds.",
)
def mcp_command(tasks: tuple[Path, ...], profile: str, budget: float) -> None:
    """Serve a Model Context Protocol server over stdio for coding agents: tools list_tasks,
    verify, bench and explain. TASKS are suite folders (every task, by its key) or task files
    and GPU MODE task folders (by their name); agents verify only against these."""
    from kernelproof.agent.tool_server import serve_stdio, task_book

    try:
        book = task_book(list(tasks))
    except KernelproofError as exc:
        _fail(exc)
    serve_stdio(book, profile=profile, budget_s=budget)


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of the JSON report (`--json`), generated from the report's model:
    validate reports against it (it is also docs/report.schema.json)."""
    from kernelproof.schema.json_schema import report_json_schema_text

    click.echo(report_json_schema_text(), nl=False)


@app.group()
def token() -> None:
    """Manage the API tokens of `kernelproof serve`."""


@token.command("create")
@click.argument("name")
@click.option(
    "--tokens",
    "tokens_path",
    type=PATH,
    required=True,
    help="The tokens file; created when missing. Only the token's hash is stored.",
)
def token_create(name: str, tokens_path: Path) -> None:
    """Make a token called NAME. The token is printed alone on stdout, once: keep it; the file
    keeps only its hash."""
    from kernelproof.serve.tokens import create_token

    click.echo(create_token(name, tokens_path))


@token.command("revoke")
@click.argument("name")
@click.option(
    "--tokens",
    "tokens_path",
    type=PATH,
    required=True,
    help="The tokens file the token was made in.",
)
def token_revoke(name: str, tokens_path: Path) -> None:
    """Revoke the token called NAME: it is removed from the file, and a running server
    refuses it from its next request on (its submissions and results stay)."""
    from kernelproof.serve.tokens import revoke_token

    removed = revoke_token(name, tokens_path)
    click.echo(f"revoked {removed} token(s) named {name!r} in {tokens_path}", err=True)


def main() -> None:
    """Console entry point. Usage errors exit with the ``error`` verdict's code (4), not click's
    2, because 2 means ``suspect`` in kernelproof's contract."""
    try:
        app.main(standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        console.print("[red]aborted[/red]")
        sys.exit(int(ExitCode.ERROR))
    except KernelproofError as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}")
        sys.exit(int(ExitCode.ERROR))
    except click.ClickException as exc:
        console.print(f"[red]error:[/red] {exc.format_message()}")
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            console.print(exc.ctx.get_usage())
        sys.exit(int(ExitCode.ERROR))


if __name__ == "__main__":
    main()
