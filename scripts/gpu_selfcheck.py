"""Exercise the whole CUDA path of kernelproof in one command and print a table.

    python scripts/gpu_selfcheck.py [--quick] [--json PATH] [--out DIR] [--only TEXT]...

Checks: CUDA-event timing against a host clock; the OS sandbox around a CUDA candidate (what
the machine's kernel enforced: where it is incomplete, the later verifications run with
``insecure_sandbox`` so that they still test the CUDA path); the side-stream exploit timed honestly and
caught by the stability probe; the L2 flush (size from the device, persisting-L2 limit reset);
the poisoned caching allocator; a Triton and a load_inline CUDA candidate verified; the GPU-only
rows of HACKS.md (6: side stream, 25: L2 persistence, 4 on the caching allocator); the
guard's side-stream shadow check. Each row is printed (and appended to ``DIR/rows.jsonl``) as
soon as its check ends, and a check that outlasts ``--check-timeout`` is a failed row, so a run
cut short by a lease's limit still says what it found. Exits 0 when every check passes, 1
otherwise, 2 when there is no CUDA device.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
os.environ.setdefault("TORCH_EXTENSIONS_DIR", str(ROOT / ".cache" / "torch_extensions"))
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ROOT / ".cache" / "torchinductor"))


@dataclass
class Check:
    name: str
    passed: bool
    detail: str
    seconds: float


class CheckTimeout(Exception):
    pass


def _timed_out(signum: int, frame: object) -> None:
    raise CheckTimeout("the check outlasted --check-timeout")


def run_check(name: str, fn: Callable[[], tuple[bool, str]], timeout_s: int) -> Check:
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(timeout_s)
    try:
        passed, detail = fn()
    except Exception as exc:  # noqa: BLE001 - a failing check is a row, not a crash
        passed, detail = False, f"{type(exc).__name__}: {exc}\n{traceback.format_exc()[-800:]}"
    finally:
        signal.alarm(0)
    return Check(name, passed, detail, time.monotonic() - started)


#: Set by the sandbox check where CUDA cannot run inside the sandbox on this machine (or by
#: --no-sandbox): the later verifications then run without it (and say so in their reports),
#: so that they still test the rest of the CUDA path.
SANDBOX_ACCEPTED: dict[str, object] = {}


def sandbox_on_cuda() -> tuple[bool, str]:
    """An honest candidate verified on the GPU inside the full OS sandbox: Landlock must let the
    driver's nodes through, and every mechanism must be entered and seen from outside. Where it
    fails, each mechanism is tried on its own in a fresh process to say which one breaks CUDA."""
    from kernelproof.controller.verify import verify

    report = verify(
        EXAMPLES / "softmax" / "reference.py",
        EXAMPLES / "softmax" / "correct.py",
        device="cuda",
        seeds=2,
        timing=False,
    )
    box = report.sandbox
    missing = {} if box is None else box.missing
    passed = report.verdict.value == "verified"
    detail = (
        f"verdict {report.verdict.value}; enforced {[] if box is None else box.enforced}; "
        f"missing {missing}; {first_problem(report)}"
    )
    if not passed:
        SANDBOX_ACCEPTED.update(sandbox=False, insecure_sandbox=True)
        detail += "; CUDA under each mechanism: " + sandbox_bisect()
    return passed, detail


#: The sandbox's steps, in the order the worker takes them (see kernelproof.sandbox.enter);
#: mounts and proc only ever inside the namespaces (outside, they would change this machine's).
SANDBOX_TRIALS = {
    "none": [],
    "namespaces": ["namespaces"],
    "namespaces+mounts+proc": ["namespaces", "mounts", "proc"],
    "limits": ["limits"],
    "landlock": ["landlock"],
    "capabilities": ["caps"],
    "seccomp": ["seccomp"],
    "all": ["namespaces", "mounts", "proc", "limits", "landlock", "caps", "seccomp"],
}


#: Landlock alone broke CUDA on an H200 (error 304); these variants say what of it does.
LANDLOCK_TRIALS = {
    "landlock": ["landlock"],
    "no scopes": ["landlock-noscope", "landlock"],
    "no signal scope": ["landlock-nosignal", "landlock"],
    "no socket scope": ["landlock-nosocket", "landlock"],
    "ioctl+write on all /dev": ["landlock-devall", "landlock"],
    "+read /run": ["landlock-read=/run", "landlock"],
    "+read /var": ["landlock-read=/var", "landlock"],
    "+read /tmp": ["landlock-read=/tmp", "landlock"],
    "+read /root": ["landlock-read=/root", "landlock"],
    "+read /": ["landlock-read=/", "landlock"],
    "+write /": ["landlock-write=/", "landlock"],
    "+write / +devall +noscope": [
        "landlock-write=/",
        "landlock-devall",
        "landlock-noscope",
        "landlock",
    ],
}


def landlock_bisect() -> tuple[bool, str]:
    said = sandbox_bisect(LANDLOCK_TRIALS)
    return "landlock: CUDA ok" in said, said


def sandbox_bisect(trials: dict[str, list[str]] = SANDBOX_TRIALS) -> str:
    """Start CUDA in fresh processes, each behind some of the sandbox's mechanisms."""
    import subprocess

    children = {
        name: subprocess.Popen(
            [sys.executable, __file__, "--sandbox-trial", ",".join(steps)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name, steps in trials.items()
    }
    said = []
    for name, child in children.items():
        try:
            out, _ = child.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            child.kill()
            out = "timed out"
        last = [line for line in out.splitlines() if line.startswith("TRIAL")]
        said.append(f"{name}: {last[-1][6:] if last else out.strip()[-300:]}")
    return " | ".join(said)


def sandbox_trial(steps: list[str]) -> None:
    """In this fresh process: take the sandbox's ``steps``, then start CUDA and say how it went.

    torch is imported after the steps, as in a worker forked from the forkserver: a process with
    threads cannot enter a user namespace. The mount steps run only once the namespaces are
    entered: outside them they would mask this machine's own /tmp, /run and /proc."""
    import tempfile

    from kernelproof import sandbox

    plan = sandbox.SandboxPlan(
        scratch=tempfile.mkdtemp(prefix="kp-trial-"),
        readable=sandbox.readable_defaults(),
        cuda=True,
    )
    state = sandbox.SandboxState()

    def namespaces() -> None:
        if sandbox.enter_namespaces(state):
            sandbox.fork_into_pid_namespace()

    def inside(step: Callable[[], None]) -> Callable[[], None]:
        def guarded() -> None:
            if "mnt-namespace" not in state.enforced:
                raise SystemExit(f"TRIAL skipped: no namespaces ({state.missing})")
            step()

        return guarded

    actions: dict[str, Callable[[], None]] = {
        "namespaces": namespaces,
        "mounts": inside(lambda: sandbox.private_mounts(plan, state)),
        "proc": inside(lambda: sandbox.mount_proc(state)),
        "limits": lambda: sandbox.limit_resources(state),
        "landlock": lambda: sandbox.restrict_filesystem(plan, state),
        "caps": lambda: sandbox.drop_capabilities(state),
        "seccomp": lambda: sandbox.filter_syscalls(state),
    }
    for step in steps:
        if step.startswith("landlock-"):  # a variant, to find what of Landlock breaks CUDA
            kind, _, value = step.partition("=")
            if kind == "landlock-noscope":
                sandbox.SCOPE_SIGNAL = sandbox.SCOPE_ABSTRACT_UNIX_SOCKET = 0
            elif kind == "landlock-nosignal":
                sandbox.SCOPE_SIGNAL = 0
            elif kind == "landlock-nosocket":
                sandbox.SCOPE_ABSTRACT_UNIX_SOCKET = 0
            elif kind == "landlock-read":
                plan.readable.append(value)
            elif kind == "landlock-write":
                plan.writable.append(value)
            elif kind == "landlock-devall":
                sandbox._cuda_nodes = lambda: ["/dev"]
            continue
        actions[step]()
    try:
        import torch

        value = float((torch.ones(4, device="cuda") * 2).sum())
        result = f"CUDA ok ({value:.0f})"
    except Exception as exc:  # noqa: BLE001 - the failure is the answer
        result = f"CUDA fails: {type(exc).__name__}: {' '.join(str(exc).split())[:400]}"
    print(f"TRIAL {result}; missing {state.missing}", flush=True)


def first_problem(report: object) -> str:
    """The report's summary and its first error or failing finding, in full: a row must say
    what went wrong, not only that it did."""
    findings = [
        f
        for f in report.findings
        if f.severity.value in ("fail", "suspect")  # type: ignore[attr-defined]
    ]
    text = report.summary[:200]  # type: ignore[attr-defined]
    if findings:
        text += f"; first {findings[0].check.value}: {' '.join(findings[0].message.split())[:700]}"
    return text


def event_timing() -> tuple[bool, str]:
    import torch

    from kernelproof.timing.call_timer import CallTimer

    timer = CallTimer.for_device("cuda", hot=True)
    a = torch.randn(4096, 4096, device="cuda")
    fn = lambda m: m @ m  # noqa: E731
    for _ in range(3):
        timer.time_call(fn, [a])
    event_s = statistics.median(timer.time_call(fn, [a])[0] for _ in range(10))
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(10):
        fn(a)
    torch.cuda.synchronize()
    host_s = (time.perf_counter() - started) / 10
    ratio = event_s / host_s
    return (
        0.7 < ratio < 1.3,
        f"event {event_s * 1e3:.3f} ms vs host clock {host_s * 1e3:.3f} ms (ratio {ratio:.2f})",
    )


def side_stream_timing() -> tuple[bool, str]:
    """The side-stream candidate's time under our timer, against the truth (a host clock around
    the call and a whole-device synchronize) and a naive current-stream timer. The input is large
    enough that the side stream's work outlasts its launches many times over (on an H200 a
    16 MiB one did not: the naive timer saw 0.32 ms of launches, ours 0.72 ms)."""
    import importlib.util

    import torch

    from kernelproof.timing.call_timer import CallTimer

    spec = importlib.util.spec_from_file_location("side", EXAMPLES / "gpu" / "side_stream.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    model = module.ModelNew()
    x = torch.randn(512, 65536, device="cuda")
    timer = CallTimer.for_device("cuda", hot=True)
    for _ in range(3):
        timer.time_call(model, [x])
    ours = statistics.median(timer.time_call(model, [x])[0] for _ in range(5))
    naive, truth = [], []
    for _ in range(5):
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        started = time.perf_counter()
        start.record()
        model(x)
        end.record()
        end.synchronize()  # waits for the current stream only
        naive.append(start.elapsed_time(end) * 1e-3)
        torch.cuda.synchronize()
        truth.append(time.perf_counter() - started)
    naive_s, truth_s = statistics.median(naive), statistics.median(truth)
    return 0.7 < ours / truth_s < 1.3 and naive_s < 0.5 * truth_s, (
        f"device-wide timer {ours * 1e3:.3f} ms, host clock with a device synchronize "
        f"{truth_s * 1e3:.3f} ms, naive current-stream timer {naive_s * 1e3:.3f} ms "
        "(ours must match the synchronized clock; the naive one misses the side stream)"
    )


def verdict_check(
    candidate: str,
    expected: str,
    finding: str | None = None,
    reference: str = "softmax/reference.py",
    **settings: object,
) -> Callable[[], tuple[bool, str]]:
    def check() -> tuple[bool, str]:
        from kernelproof.controller.verify import verify
        from kernelproof.schema import FindingCheck

        path = EXAMPLES / candidate
        report = verify(
            EXAMPLES / reference,
            path,
            device="cuda",
            seeds=2,
            base_seed=7,
            **{**SANDBOX_ACCEPTED, **settings},
        )
        checks = {f.check for f in report.findings}
        ok = report.verdict.value == expected and (finding is None or finding in checks)
        timing = ""
        if report.timing is not None:
            timing = f"; speedup {report.timing.speedup:.2f}x CI {report.timing.speedup_ci}"
        names = sorted(c.value for c in checks - {FindingCheck.STATIC_LANGUAGES})
        return ok, (
            f"verdict {report.verdict.value} (expected {expected}); findings {names}{timing}; "
            f"{first_problem(report) if not ok else report.summary[:160]}"
        )

    return check


def e2e_soak_on_cuda() -> tuple[bool, str]:
    """The decoder example's honest RMSNorm in its host on the GPU, with a short soak: the
    soak must read each worker's CUDA memory per step (the CPU never exercises that path)."""
    from kernelproof.e2e.run import e2e

    decoder = EXAMPLES / "e2e" / "decoder"
    report = e2e(
        decoder / "host.py",
        [f"RMSNorm={decoder / 'rmsnorm_honest.py'}"],
        soak=16,
        device="cuda",
        seeds=2,
        timing=False,
        **SANDBOX_ACCEPTED,
    )
    soak = report.e2e.soak if report.e2e is not None else None
    ok = report.verdict.value == "verified" and soak is not None and soak.cuda_memory == "measured"
    memory = (
        "no soak"
        if soak is None
        else (
            f"cuda memory {soak.cuda_memory}, limit {soak.cuda_memory_limit_bytes / 2**30:.0f} GiB, "
            f"projected failure {soak.cuda_projected_failure_step}"
        )
    )
    return (
        ok,
        f"verdict {report.verdict.value} (expected verified); {memory}; {report.summary[:160]}",
    )


def l2_flush() -> tuple[bool, str]:
    import torch

    from kernelproof.timing.call_timer import CUDA_LIMIT_PERSISTING_L2, CallTimer

    runtime = None
    for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.13"):
        try:
            runtime = ctypes.CDLL(name)
            break
        except OSError:
            continue
    properties = torch.cuda.get_device_properties(0)
    if runtime is not None:  # what an exploit would do: reserve a persisting-L2 window
        runtime.cudaDeviceSetLimit(
            CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(properties.L2_cache_size // 2)
        )
    cold = CallTimer.for_device("cuda", hot=False)
    hot = CallTimer.for_device("cuda", hot=True)
    limit = ctypes.c_size_t(123)
    if runtime is not None:
        runtime.cudaDeviceGetLimit(ctypes.byref(limit), CUDA_LIMIT_PERSISTING_L2)
    x = torch.randn(properties.L2_cache_size // 8, device="cuda")  # half of L2: resident when hot
    fn = lambda t: t.sum()  # noqa: E731
    for timer in (cold, hot):
        for _ in range(3):
            timer.time_call(fn, [x])
    cold_s = statistics.median(cold.time_call(fn, [x])[0] for _ in range(20))
    hot_s = statistics.median(hot.time_call(fn, [x])[0] for _ in range(20))
    ok = (
        cold.flush_bytes == 2 * properties.L2_cache_size
        and cold_s > hot_s
        and (runtime is None or (cold.l2_reset and limit.value == 0))
    )
    return ok, (
        f"flush {cold.flush_bytes >> 20} MiB (L2 {properties.L2_cache_size >> 20} MiB); "
        f"persisting-L2 limit after reset {limit.value}; cold {cold_s * 1e6:.1f} us > "
        f"hot {hot_s * 1e6:.1f} us"
    )


def poisoned_allocator() -> tuple[bool, str]:
    import torch

    from kernelproof.checks.probes import poison_memory

    x = torch.randn(1 << 20, device="cuda")
    answer = torch.softmax(x, -1)
    del answer
    poison_memory([x])
    reused = torch.empty(1 << 20, device="cuda")
    nan_share = float(torch.isnan(reused).float().mean())
    return nan_share > 0.99, f"{nan_share:.1%} of a freshly reused block is NaN after poisoning"


def guard_side_stream() -> tuple[bool, str]:
    """The guard's CUDA path (kernelproof.dispatch.side_stream): a sampled call returns without
    waiting for a slow reference on the side stream, and a time bomb is still rolled back."""
    import torch

    import kernelproof
    from kernelproof.controller.verify import verify
    from kernelproof.tasks.module import import_file

    folder = EXAMPLES / "guard"
    report = verify(
        folder / "reference.py",
        folder / "time_bomb.py",
        device="cuda",
        seeds=2,
        timing=False,
        native_audit=False,
        **SANDBOX_ACCEPTED,
    )
    if report.verdict.value != "verified":
        return False, f"time_bomb.py on cuda: {report.verdict.value}: {report.summary}"
    task = import_file(str(folder / "reference.py"), "selfcheck_guard_reference")

    class SlowReference(task.Model):
        def forward(self, x):
            torch.cuda._sleep(100_000_000)  # ~50 ms of GPU time on the side stream
            return super().forward(x)

    bomb = import_file(str(folder / "time_bomb.py"), "selfcheck_time_bomb").ModelNew().cuda()
    bomb.goes_wrong_after = 3
    guarded = kernelproof.guard(bomb, SlowReference().cuda(), report, shadow_rate=1.0)
    x = torch.randn(64, 256, device="cuda")
    guarded(x)  # warm: the float64 copy, the side stream
    guarded.flush()
    torch.cuda.synchronize()
    started = time.perf_counter()
    guarded(x)
    hot_path_s = time.perf_counter() - started
    for _ in range(10):
        guarded(x)
    guarded.flush()
    stats = guarded.stats
    after = guarded(x)
    right = bool(torch.allclose(after, torch.softmax(x, -1), rtol=1e-4, atol=1e-6))
    passed = hot_path_s < 0.025 and stats["rolled_back"] and stats["mismatches"] >= 1 and right
    return passed, (
        f"sampled call returned in {hot_path_s * 1e3:.1f} ms with a ~50 ms "
        f"reference queued; stats {stats}; output after rollback right: {right}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip torch.compile baselines")
    parser.add_argument("--json", type=Path, help="write the rows as JSON here too")
    parser.add_argument("--out", type=Path, help="append each row to DIR/rows.jsonl as it ends")
    parser.add_argument(
        "--only", action="append", default=[], help="run the checks whose name holds TEXT"
    )
    parser.add_argument("--check-timeout", type=int, default=300, help="seconds per check")
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="verify without the OS sandbox (its own row still runs in it)",
    )
    parser.add_argument("--sandbox-trial", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sandbox_trial is not None:
        sandbox_trial([s for s in args.sandbox_trial.split(",") if s])
        return 0
    if args.no_sandbox:
        SANDBOX_ACCEPTED.update(sandbox=False, insecure_sandbox=True)
    import torch

    if not torch.cuda.is_available():
        print("gpu_selfcheck: no CUDA device here; run it on a machine with one.")
        return 2
    timing = {"budget_s": 4.0, "compile_baseline": not args.quick}
    planned: list[tuple[str, Callable[[], tuple[bool, str]]]] = [
        ("cuda events vs host clock", event_timing),
        ("CUDA under Landlock's variants", landlock_bisect),
        ("OS sandbox around a CUDA candidate", sandbox_on_cuda),
        ("side stream timed honestly (HACKS 6)", side_stream_timing),
        (
            "side stream caught by stability probe (HACKS 6)",
            verdict_check("gpu/side_stream.py", "suspect", "output-unstable", timing=False),
        ),
        ("L2 flush + persisting-L2 reset (HACKS 25)", l2_flush),
        ("poisoned caching allocator", poisoned_allocator),
        (
            "empty_like output caught (HACKS 4)",
            verdict_check("gpu/empty_output.py", "incorrect", "correctness", timing=False),
        ),
        (
            "load_inline CUDA candidate verified",
            verdict_check("gpu/softmax_cuda_inline.py", "verified", **timing),
        ),
        (
            "PyTorch rewrite verified with timing",
            verdict_check("softmax/correct.py", "verified", **timing),
        ),
        ("guard: shadow check on a side stream, time bomb rolled back", guard_side_stream),
        ("e2e soak reads CUDA memory per step", e2e_soak_on_cuda),
        # Triton compiles each shape the matrix tries: over 80 s on an H200.
        ("Triton candidate verified", verdict_check("gpu/softmax_triton.py", "verified", **timing)),
        # A 2**31-element float16 vector: 4 GiB in and out per worker, copied to the host to be
        # compared, so the workers' memory limit is raised for these two (last: the slowest).
        (
            "int32 offsets wrong past 2**31 elements",
            verdict_check(
                "gpu/scale/int32_offsets.py",
                "incorrect",
                "correctness",
                reference="gpu/scale/reference.py",
                timing=False,
                memory_limit_gib=48.0,
            ),
        ),
        (
            "int64 offsets verified past 2**31 elements",
            verdict_check(
                "gpu/scale/int64_offsets.py",
                "verified",
                reference="gpu/scale/reference.py",
                timing=False,
                memory_limit_gib=48.0,
            ),
        ),
    ]
    if args.only:
        planned = [(n, f) for n, f in planned if any(t.lower() in n.lower() for t in args.only)]
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    checks = []
    for name, fn in planned:
        check = run_check(name, fn, args.check_timeout)
        checks.append(check)
        mark = "pass" if check.passed else "FAIL"
        print(f"[{mark}] {name} ({check.seconds:.1f} s): {check.detail[:600]}", flush=True)
        if args.out:
            with (args.out / "rows.jsonl").open("a") as rows:
                rows.write(json.dumps(asdict(check)) + "\n")
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"kernelproof GPU self-check on {torch.cuda.get_device_name()}")
    for column in ("check", "result", "detail", "s"):
        table.add_column(column, overflow="fold")
    for check in checks:
        table.add_row(
            check.name,
            "[green]pass[/]" if check.passed else "[bold red]FAIL[/]",
            check.detail[:300],
            f"{check.seconds:.1f}",
        )
    Console(width=160).print(table)
    if args.json:
        args.json.write_text(json.dumps([asdict(c) for c in checks], indent=2))
    return 0 if all(c.passed for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
