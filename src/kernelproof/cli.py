"""The ``kernelproof`` command line. It parses arguments and calls library functions, nothing more."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from kernelproof.schema import ExitCode

console = Console()

PATH = click.Path(path_type=Path)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kernelproof")
def app() -> None:
    """Verify and benchmark AI-written kernels against a trusted PyTorch reference."""


@app.command()
@click.argument("reference", type=PATH)
@click.argument("candidate", type=PATH)
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None, help="Default: cpu.")
@click.option("--dtype", type=click.Choice(["float32", "float16", "bfloat16"]), default=None,
              help="Working dtype (default: the task's own).")
@click.option("--json", "json_path", type=PATH, default=None, help="Write the JSON report here.")
@click.option("--html", "html_path", type=PATH, default=None, help="Write the HTML packet here.")
@click.option("--seeds", type=click.IntRange(min=1), default=None,
              help="Seeds at the default shape (default 5).")
@click.option("--seed", type=int, default=None, help="Base seed: reproduces an earlier run.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Timing budget in seconds.")
@click.option("--no-timing", is_flag=True, help="Skip the timing phase.")
@click.option("--allow-torch", is_flag=True, help="Torch ops in the candidate are expected.")
@click.option("--strict", is_flag=True,
              help="Any of the reference's heavy ops run by the candidate is suspect.")
@click.option("--atol", type=click.FloatRange(min=0), default=None,
              help="Fixed absolute tolerance (KernelBench-style).")
@click.option("--rtol", type=click.FloatRange(min=0), default=None,
              help="Fixed relative tolerance (KernelBench-style).")
@click.option("--profile", default="default", show_default=True,
              help="default, ci, kernelbench-compat or strict.")
@click.option("--fixed-shapes", is_flag=True,
              help="Only the task's own shape, as KernelBench does.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Intra-op threads per worker (default on CPU: 1).")
@click.option("--hot", is_flag=True, help="Time with warm caches (no flush before each call).")
@click.option("--no-compile-baseline", is_flag=True,
              help="Do not time torch.compile of the reference.")
@click.option("--cuda-graphs", is_flag=True, help="On CUDA, time CUDA-graph replays.")
def verify(reference: Path, candidate: Path, device: str | None, dtype: str | None,
           json_path: Path | None, html_path: Path | None, seeds: int | None, seed: int | None,
           budget: float | None, no_timing: bool, allow_torch: bool, strict: bool,
           atol: float | None, rtol: float | None, profile: str, fixed_shapes: bool,
           threads: int | None, hot: bool, no_compile_baseline: bool, cuda_graphs: bool) -> None:
    """Verify CANDIDATE against REFERENCE. The exit code is the verdict's:
    0 verified, 1 incorrect, 2 suspect, 3 broken, 4 error."""
    from kernelproof.controller.verify import verify as run_verify
    from kernelproof.report.files import write_html, write_json
    from kernelproof.report.terminal import render_report

    overrides = {
        "device": device, "dtype": dtype, "seeds": seeds, "base_seed": seed, "budget_s": budget,
        "timing": False if no_timing else None, "allow_torch": True if allow_torch else None,
        "strict": True if strict else None, "atol": atol, "rtol": rtol,
        "shape_variants": False if fixed_shapes else None, "threads": threads,
        "hot": True if hot else None, "cuda_graphs": True if cuda_graphs else None,
        "compile_baseline": False if no_compile_baseline else None,
    }
    report = run_verify(reference, candidate, profile=profile, **overrides)
    render_report(report, console)
    for path, writer in ((json_path, write_json), (html_path, write_html)):
        if path is not None:
            console.print(f"wrote {writer(report, path)}")
    sys.exit(int(report.verdict.exit_code))


@app.command("audit-task")
@click.argument("reference", type=PATH)
@click.option("--seeds", type=click.IntRange(min=1), default=None,
              help="Seeds to audit at the default shape (default 3).")
@click.option("--seed", type=int, default=None, help="Base seed: reproduces an earlier run.")
@click.option("--json", "json_path", type=PATH, default=None, help="Write the JSON audit here.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default=None, help="Default: cpu.")
@click.option("--dtype", type=click.Choice(["float32", "float16", "bfloat16"]), default=None,
              help="Working dtype (default: the task's own).")
@click.option("--atol", type=click.FloatRange(min=0), default=None,
              help="Audit a fixed absolute tolerance (KernelBench-style).")
@click.option("--rtol", type=click.FloatRange(min=0), default=None,
              help="Audit a fixed relative tolerance (KernelBench-style).")
@click.option("--profile", default="default", show_default=True,
              help="default, ci, kernelbench-compat or strict.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Intra-op threads in the worker (default: all cores).")
def audit_task(reference: Path, seeds: int | None, seed: int | None, json_path: Path | None,
               device: str | None, dtype: str | None, atol: float | None, rtol: float | None,
               profile: str, threads: int | None) -> None:
    """Audit whether REFERENCE's comparator rejects wrong answers (zeros, a constant, the
    input passed through, a bf16 round trip, a 1% perturbation) and accepts rounding noise.
    Exit code: 0 adequate, 1 degenerate or too tight, 4 error."""
    from kernelproof.controller.audit_task import DEFAULT_SEEDS
    from kernelproof.controller.audit_task import audit_task as run_audit
    from rich.text import Text

    from kernelproof.errors import KernelproofError
    from kernelproof.report.adequacy import render_adequacy
    from kernelproof.schema import AuditExitCode

    settings = {"device": device, "dtype": dtype, "atol": atol, "rtol": rtol, "threads": threads}
    try:
        report = run_audit(reference, seeds=seeds or DEFAULT_SEEDS, base_seed=seed,
                           profile=profile, **settings)
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
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads to calibrate with (default on CPU: 1, as verify uses).")
@click.option("--force", is_flag=True, help="Measure again even if this machine is cached.")
def calibrate(device: str, threads: int | None, force: bool) -> None:
    """Measure this machine's memory bandwidth and matmul throughput; cache them per machine."""
    from kernelproof.config import resolve_settings
    from kernelproof.controller.workers import worker_threads
    from kernelproof.roofline import cache_dir, calibrate as run_calibration

    threads = worker_threads(resolve_settings(overrides={"device": device, "threads": threads}))
    ceilings = run_calibration(device, threads=threads, force=force)
    console.print(f"{device} ({threads or 'default'} threads): "
                  f"{ceilings.peak_bytes_per_s / 1e9:.1f} GB/s, "
                  f"{ceilings.peak_flops / 1e9:.1f} GFLOP/s float32 matmul "
                  f"({escape(ceilings.source)}), cached in {escape(str(cache_dir()))}")


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
    except click.ClickException as exc:
        console.print(f"[red]error:[/red] {exc.format_message()}")
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            console.print(exc.ctx.get_usage())
        sys.exit(int(ExitCode.ERROR))


if __name__ == "__main__":
    main()
