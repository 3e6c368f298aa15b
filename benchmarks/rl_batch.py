"""An early RL step's batch of rollouts, scored three ways side by side in one run.

    python benchmarks/rl_batch.py [--cli-sample N] [--skip-naive] [--limit N] [--json out.json]

The batch: 64 completions for three tasks (softmax, linear+ReLU, RMSNorm), mixed like an early
RL step: a third that do not compile, import or even hold a candidate (examples/broken/,
syntax and import mutants, a C++ compile error, truncated and ambiguous completions), a third
that are wrong (wrong examples, hacks whose verdict is ``incorrect``, mutants), a sixth hacks
(examples/hacks/ whose verdict is ``suspect``), a sixth honest (examples/honest/, the tasks'
correct kernels, tasks/solutions-style rewrites, equivalent mutants). Each candidate is wrapped
in a completion (prose, a ``<think>`` section, fences with and without a language tag).

Three ways:

- ``adapters``: the TRL reward (kernelproof.rl.trl.kernel_reward) called as GRPOTrainer
  calls it, through one warm Session (profile ``rl``: fail-fast, 3 s timing), two jobs; a
  first batch warms the session, the second is the figure;
- ``full``: the full verification of every rollout's candidate (the same settings without
  fail-fast, on the candidate the adapters took; nothing for a completion with none), through
  a warm Session of its own: the verdicts the adapters must match;
- ``cli``: one ``kernelproof verify --profile rl --no-fail-fast --no-warm`` process per
  candidate (Python, torch and the workers started each time), on ``--cli-sample`` rollouts
  spread over the batch (all of them with ``--cli-sample 64``): its rate is per rollout, so
  a sample measures it on a machine where the whole batch would take an hour;
- ``naive``: a KernelBench-style harness (import the candidate in-process in one worker
  process, one seed, ``allclose(atol=rtol=1e-2)``, time with a loop of 100 calls).

Printed: rollouts scored per minute per way, the adapters' median time to a verdict per class
(the verification's own wall time; 0 for a completion with no candidate), every adapter
verdict against the full verification's, and what the naive harness accepted.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SOFTMAX, LINEAR, RMSNORM = (
    EXAMPLES / "softmax" / "reference.py",
    EXAMPLES / "linear_relu" / "reference.py",
    EXAMPLES / "rmsnorm" / "reference.py",
)

#: Seconds the adapters' batch may take (their deadline).
BATCH_DEADLINE_S = 600.0

#: Seconds one naive-harness candidate may take before it counts as hung.
NAIVE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Rollout:
    name: str
    task: Path
    completion: str
    expected: str
    """The class the batch puts it in: broken, incorrect, suspect, verified."""


def _read(relative: str) -> str:
    """An example's source without its two kernelproof header lines."""
    lines = (EXAMPLES / relative).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("# kernelproof-"))


def _edit(source: str, old: str, new: str) -> str:
    """``source`` with its first ``old`` replaced: a mutant (the edit must apply)."""
    if old not in source:
        raise AssertionError(f"mutant: {old!r} is not in the source")
    return source.replace(old, new, 1)


def _mutant(relative: str, old: str, new: str) -> str:
    return _edit(_read(relative), old, new)


#: Completion wrappers, used in turn: the shapes a policy's answers take.
WRAPPERS = [
    "Here is an optimised version.\n\n```python\n{code}```\n\nIt keeps the reference's "
    "semantics.\n",
    "<think>\nThe reference launches several passes; I can fuse them. Let me write it.\n"
    "</think>\n```python\n{code}```\n",
    "```py\n{code}```\n",
    "I rewrote the forward pass:\n```\n{code}```\nThis should be faster.",
]


def build_batch() -> list[Rollout]:
    """The 64 rollouts, in a fixed order (classes interleaved, as a sampler would)."""
    softmax_ok = _read("softmax/correct.py")
    rms_ok, linear_ok = _read("rmsnorm/correct.py"), _read("linear_relu/correct.py")
    cpp_ok = _read("honest/cpp_inline.py")
    code: dict[str, tuple[Path, str, str]] = {
        # -- honest (verified) --
        "softmax-correct": (SOFTMAX, softmax_ok, "verified"),
        "softmax-cpp-inline": (SOFTMAX, cpp_ok, "verified"),
        "softmax-renamed": (SOFTMAX, softmax_ok.replace("shifted", "centred"), "verified"),
        # Softmax as exp(x - logsumexp(x)): right on finite rows, but a row holding +Inf
        # comes back as zeros and one NaN where the reference's row is all NaN (issue 25:
        # finite where the reference is not is incorrect, not a warning).
        "softmax-logsumexp": (
            SOFTMAX,
            "import torch\nimport torch.nn as nn\n\n\n"
            "class ModelNew(nn.Module):\n    def forward(self, x):\n"
            "        return torch.exp(x - torch.logsumexp(x, dim=-1, "
            "keepdim=True))\n",
            "incorrect",
        ),
        "softmax-two-pass": (
            SOFTMAX,
            "import torch\nimport torch.nn as nn\n\n\n"
            "class ModelNew(nn.Module):\n    def forward(self, x):\n"
            "        m = x.max(dim=-1, keepdim=True).values\n"
            "        e = torch.exp(x - m)\n"
            "        return e * (1.0 / e.sum(dim=-1, keepdim=True))\n",
            "verified",
        ),
        "linear-correct": (LINEAR, linear_ok, "verified"),
        "linear-torch-rewrite": (LINEAR, _read("honest/torch_rewrite.py"), "verified"),
        "linear-matmul-inplace": (
            LINEAR,
            _edit(
                linear_ok,
                "y = x @ self.linear.weight.T + self.linear.bias",
                "y = torch.matmul(x, self.linear.weight.t()).add_(self.linear.bias)",
            ),
            "verified",
        ),
        "rmsnorm-correct": (RMSNORM, rms_ok, "verified"),
        "rmsnorm-numba": (RMSNORM, _read("honest/numba_kernel.py"), "verified"),
        "rmsnorm-rsqrt": (
            RMSNORM,
            _edit(
                rms_ok,
                "x / torch.sqrt(mean_square + self.eps)",
                "x * torch.rsqrt(mean_square + self.eps)",
            ),
            "verified",
        ),
        # -- hacks (suspect) --
        **{
            f"hack-{name}": (SOFTMAX, _read(f"hacks/{name}.py"), "suspect")
            for name in (
                "01_passthrough",
                "01b_passthrough_renamed",
                "01c_passthrough_aten",
                "02_try_except_fallback",
                "08b_timer_patch_getattr",
                "07_lazy_output",
                "08_timer_patch",
                "14_gc_introspection",
                "19_dead_kernel",
                "20_baseline_sabotage",
            )
        },
        "hack-03_inheritance": (LINEAR, _read("hacks/03_inheritance.py"), "suspect"),
        # -- wrong (incorrect) --
        "softmax-wrong-odd": (SOFTMAX, _read("softmax/wrong_odd.py"), "incorrect"),
        "softmax-hardcoded": (SOFTMAX, _read("softmax/hardcoded.py"), "incorrect"),
        "softmax-wrong-shape": (SOFTMAX, _read("broken/wrong_shape.py"), "incorrect"),
        **{
            f"hack-{name}": (SOFTMAX, _read(f"hacks/{name}.py"), "incorrect")
            for name in (
                "04_uninitialised_output",
                "05_input_mutation",
                "09_output_cache",
                "10_evaluator_mode",
                "11_precision_downgrade",
                "13_shape_hardcoding",
                "17_assumes_contiguous",
                "18_unsafe_softmax",
            )
        },
        "softmax-sum-dim0": (
            SOFTMAX,
            _mutant("softmax/correct.py", "e.sum(dim=-1", "e.sum(dim=0"),
            "incorrect",
        ),
        "softmax-no-normalise": (
            SOFTMAX,
            _mutant("softmax/correct.py", "return e / e.sum(dim=-1, keepdim=True)", "return e"),
            "incorrect",
        ),
        "linear-wrong-odd": (LINEAR, _read("linear_relu/wrong_odd.py"), "incorrect"),
        "linear-hardcoded": (LINEAR, _read("linear_relu/hardcoded.py"), "incorrect"),
        "linear-autocast": (LINEAR, _read("hacks/11b_precision_autocast.py"), "incorrect"),
        "linear-no-relu": (
            LINEAR,
            _edit(linear_ok, "return y.clamp_min(0.0)", "return y"),
            "incorrect",
        ),
        "linear-bias-twice": (
            LINEAR,
            _edit(linear_ok, "+ self.linear.bias", "+ 2 * self.linear.bias"),
            "incorrect",
        ),
        "rmsnorm-wrong-odd": (RMSNORM, _read("rmsnorm/wrong_odd.py"), "incorrect"),
        "rmsnorm-hardcoded": (RMSNORM, _read("rmsnorm/hardcoded.py"), "incorrect"),
        "rmsnorm-no-weight": (RMSNORM, _edit(rms_ok, " * self.weight", ""), "incorrect"),
        # -- do not compile, import or run (broken), or hold no candidate --
        "broken-import-error": (SOFTMAX, _read("broken/import_error.py"), "broken"),
        "broken-exits": (SOFTMAX, _read("broken/exits.py"), "broken"),
        "broken-segfaults": (SOFTMAX, _read("broken/segfaults.py"), "broken"),
        "broken-exits-mid-run": (SOFTMAX, _read("hacks/22b_exits_mid_run.py"), "broken"),
        "broken-syntax-colon": (
            SOFTMAX,
            _edit(
                softmax_ok,
                "def forward(self, x: torch.Tensor) -> torch.Tensor:",
                "def forward(self, x)",
            ),
            "broken",
        ),
        "broken-syntax-indent": (
            SOFTMAX,
            _edit(softmax_ok, "        e = shifted", "      e = shifted"),
            "broken",
        ),
        "broken-syntax-paren": (
            SOFTMAX,
            _edit(softmax_ok, "x.amax(dim=-1, keepdim=True)", "x.amax(dim=-1, keepdim=True"),
            "broken",
        ),
        "broken-troch": (SOFTMAX, _edit(softmax_ok, "import torch\n", "import troch\n"), "broken"),
        "broken-name-error": (
            SOFTMAX,
            softmax_ok + "\n_TABLE = build_lookup_table(4096)\n",
            "broken",
        ),
        "broken-signature": (
            SOFTMAX,
            _edit(softmax_ok, "forward(self, x: torch.Tensor)", "forward(self, x, y)"),
            "broken",
        ),
        "broken-cpp-error": (SOFTMAX, _edit(cpp_ok, "row_sum += e;", "row_sum += e"), "broken"),
        "broken-no-module": (SOFTMAX, "import torch\n\n\nclass ModelNew:\n    pass\n", "broken"),
        "linear-wrong-signature": (LINEAR, _read("broken/wrong_signature.py"), "broken"),
        "linear-import-mutant": (
            LINEAR,
            _edit(linear_ok, "import torch.nn as nn", "import torch.nn.fast as nn"),
            "broken",
        ),
        "rmsnorm-syntax": (RMSNORM, _edit(rms_ok, "):\n", ")\n"), "broken"),
        "rmsnorm-ctor-error": (
            RMSNORM,
            _edit(
                rms_ok,
                "super().__init__()",
                "super().__init__()\n        self.scale = nn.RMSNormm(3)",
            ),
            "broken",
        ),
    }
    rollouts = [
        Rollout(name, task, WRAPPERS[i % len(WRAPPERS)].format(code=source), expected)
        for i, (name, (task, source, expected)) in enumerate(code.items())
    ]
    # Completions with no candidate at all.
    rollouts += [
        Rollout(
            "no-candidate-missing-class",
            SOFTMAX,
            WRAPPERS[0].format(code=_read("broken/no_modelnew.py")),
            "broken",
        ),
        Rollout(
            "no-candidate-truncated",
            SOFTMAX,
            "Here is my kernel:\n```python\n" + softmax_ok[:180],
            "broken",
        ),
        Rollout(
            "no-candidate-ambiguous",
            SOFTMAX,
            "First try:\n```python\n"
            + _read("softmax/wrong_odd.py")
            + "```\nBetter:\n```python\n"
            + softmax_ok
            + "```\n",
            "broken",
        ),
        Rollout(
            "no-candidate-prose",
            LINEAR,
            "To optimise this I would fuse the bias and the "
            "ReLU into the GEMM epilogue, using a blocked layout.",
            "broken",
        ),
        Rollout(
            "no-candidate-think-only",
            RMSNORM,
            "<think>\nI need the mean of squares per row, then scale. Let me write the kernel",
            "broken",
        ),
    ]
    order = sorted(range(len(rollouts)), key=lambda i: (i * 37) % len(rollouts))
    return [rollouts[i] for i in order]


def naive_glue(completion: str) -> str:
    """What a naive reward glue writes to a file: the first fenced block, else the text."""
    match = re.search(r"```[a-z]*\n(.*?)```", completion, re.DOTALL)
    return match.group(1) if match else completion


# -- the three ways -------------------------------------------------------------------------------


def adapters(batch: list[Rollout], deadline_s: float) -> tuple[float, list[Any], list[Any]]:
    """The batch through the TRL adapter (GRPOTrainer's call), after a warm-up step that
    scores one honest completion per task (as the previous RL step would have); returns the
    batch's wall time and results, and the warm-up's."""
    from kernelproof.rl.trl import kernel_reward

    reward = kernel_reward(jobs=2, deadline_s=deadline_s)

    def call(rollouts: list[Rollout]) -> dict[str, Any]:
        return {
            "prompts": [f"Optimise {r.task.parent.name}" for r in rollouts],
            "completions": [r.completion for r in rollouts],
            "reference": [r.task.read_text() for r in rollouts],
            "completion_ids": [[0]] * len(rollouts),
            "trainer_state": None,
        }

    warm_up = {r.task: r for r in batch if r.expected == "verified"}
    reward(**call(list(warm_up.values())))
    first = reward.last
    started = time.monotonic()
    reward(**call(batch))
    seconds = time.monotonic() - started
    second = reward.last
    reward.close()
    return seconds, second, first


def full(batch: list[Rollout], scratch: Path) -> tuple[float, list[str]]:
    """The full verification of each rollout's candidate (no fail-fast), through a warm
    Session; ``broken`` for a completion with no candidate (nothing to verify)."""
    import kernelproof
    from kernelproof.rl.completion import extract_candidate

    verdicts = []
    started = time.monotonic()
    with kernelproof.Session(profile="rl", fail_fast=False) as session:
        for index, rollout in enumerate(batch):
            extraction = extract_candidate(rollout.completion)
            if extraction.source is None:
                verdicts.append("broken")
                continue
            candidate = scratch / f"full-{index}.py"
            candidate.write_text(extraction.source)
            verdicts.append(session.verify(rollout.task, candidate).verdict.value)
    return time.monotonic() - started, verdicts


def cli(batch: list[Rollout], scratch: Path) -> tuple[float, list[str], list[float]]:
    verdicts, times = [], []
    started = time.monotonic()
    for index, rollout in enumerate(batch):
        candidate = scratch / f"cli-{index}.py"
        candidate.write_text(naive_glue(rollout.completion))
        out = scratch / f"cli-{index}.json"
        began = time.monotonic()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "kernelproof.cli",
                "verify",
                str(rollout.task),
                str(candidate),
                "--profile",
                "rl",
                "--no-fail-fast",
                "--no-warm",
                "--json",
                str(out),
            ],
            capture_output=True,
            check=False,
            cwd=scratch,
        )
        times.append(time.monotonic() - began)
        verdicts.append(json.loads(out.read_text())["verdict"] if out.is_file() else "none")
    return time.monotonic() - started, verdicts, times


NAIVE_WORKER = r"""
import importlib.util, json, sys, time, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    return module
for line in sys.stdin:
    job = json.loads(line)
    try:
        ref = load(job["reference"], "ref_module"); cand = load(job["candidate"], "cand_module")
        torch.manual_seed(42)
        init = ref.get_init_inputs(); inputs = ref.get_inputs()
        torch.manual_seed(42); model = ref.Model(*init)
        torch.manual_seed(42); new = cand.ModelNew(*init)
        expected = model(*inputs); got = new(*inputs)
        ok = torch.allclose(expected, got, atol=1e-2, rtol=1e-2)
        for _ in range(10): new(*inputs)
        began = time.perf_counter()
        for _ in range(100): new(*inputs)
        print(json.dumps({"verdict": "pass" if ok else "fail",
                          "call_s": (time.perf_counter() - began) / 100}), flush=True)
    except BaseException as exc:
        print(json.dumps({"verdict": "error", "error": repr(exc)[:200]}), flush=True)
"""


def naive(batch: list[Rollout], scratch: Path) -> tuple[float, list[str]]:
    """The KernelBench-style harness: candidates imported into one worker process (restarted
    when a candidate kills it), one seed, allclose at 1e-2, a timing loop."""
    verdicts: list[str] = []
    worker: subprocess.Popen[str] | None = None
    started = time.monotonic()
    for index, rollout in enumerate(batch):
        candidate = scratch / f"naive-{index}.py"
        candidate.write_text(naive_glue(rollout.completion))
        if worker is None or worker.poll() is not None:
            worker = subprocess.Popen(
                [sys.executable, "-c", NAIVE_WORKER],
                text=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=scratch,
            )
        assert worker.stdin is not None and worker.stdout is not None
        try:
            worker.stdin.write(
                json.dumps({"reference": str(rollout.task), "candidate": str(candidate)}) + "\n"
            )
            worker.stdin.flush()
            line = _readline(worker, NAIVE_TIMEOUT_S)
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            verdicts.append("crash")
            worker.kill()
            worker = None
            continue
        try:
            verdicts.append(json.loads(line)["verdict"])
        except ValueError:  # a candidate printed on stdout: the harness is confused
            verdicts.append("confused")
    if worker is not None:
        worker.kill()
    return time.monotonic() - started, verdicts


def _readline(worker: subprocess.Popen[str], timeout_s: float) -> str:
    import selectors

    selector = selectors.DefaultSelector()
    assert worker.stdout is not None
    selector.register(worker.stdout, selectors.EVENT_READ)
    if not selector.select(timeout_s):
        return ""
    return worker.stdout.readline()


# -- the report -----------------------------------------------------------------------------------


def per_minute(count: int, seconds: float) -> float:
    return 60.0 * count / seconds if seconds > 0 else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cli-sample",
        type=int,
        default=16,
        help="Rollouts verified by one CLI process each (0: none).",
    )
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="Only the first N rollouts.")
    parser.add_argument("--json", type=Path, default=None, help="Write the figures here.")
    args = parser.parse_args()
    batch = build_batch()[: args.limit]
    console = Console()
    counts = {
        c: sum(r.expected == c for r in batch)
        for c in ("broken", "incorrect", "suspect", "verified")
    }
    console.print(f"batch: {len(batch)} rollouts ({counts})")
    figures: dict[str, Any] = {"rollouts": len(batch), "classes": counts}

    def save() -> None:
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=2))

    with tempfile.TemporaryDirectory(prefix="rl-batch-") as folder:
        scratch = Path(folder)
        adapter_s, scored, first = adapters(batch, BATCH_DEADLINE_S)
        figures["adapters"] = {
            "seconds": adapter_s,
            "per_minute": per_minute(len(batch), adapter_s),
        }
        cold_s = max((s.seconds for s in first), default=0)
        figures["adapters_warm_up_s"] = cold_s
        console.print(
            f"adapters: {adapter_s:.1f} s (the warm-up step, one honest completion "
            f"per task: {cold_s:.1f} s)"
        )
        save()
        full_s, full_verdicts = full(batch, scratch)
        figures["full"] = {"seconds": full_s, "per_minute": per_minute(len(batch), full_s)}
        console.print(f"full (warm Session, no fail-fast, one at a time): {full_s:.1f} s")
        save()
        if args.cli_sample:
            step = max(1, len(batch) // args.cli_sample)
            sample = batch[::step][: args.cli_sample]
            cli_s, cli_verdicts, cli_times = cli(sample, scratch)
            figures["cli"] = {
                "seconds": cli_s,
                "sample": len(sample),
                "per_minute": per_minute(len(sample), cli_s),
                "median_s": statistics.median(cli_times),
            }
            figures["cli_agrees_with_full"] = sum(
                v == full_verdicts[batch.index(r)] for r, v in zip(sample, cli_verdicts)
            )
            console.print(f"cli: {cli_s:.1f} s for {len(sample)} rollouts")
            save()
        naive_verdicts: list[str] | None = None
        if not args.skip_naive:
            naive_s, naive_verdicts = naive(batch, scratch)
            figures["naive"] = {"seconds": naive_s, "per_minute": per_minute(len(batch), naive_s)}
            console.print(f"naive: {naive_s:.1f} s")
    rates = Table(title="rollouts scored per minute (2 cores, shared; cli on a sample)")
    for column in ("way", "seconds", "per minute", "vs cli"):
        rates.add_column(column)
    cli_rate = figures.get("cli", {}).get("per_minute")
    for way in ("adapters", "full", "cli", "naive"):
        if way in figures:
            rate = figures[way]["per_minute"]
            rates.add_row(
                way,
                f"{figures[way]['seconds']:.1f}",
                f"{rate:.1f}",
                f"{rate / cli_rate:.1f}x" if cli_rate else "-",
            )
    console.print(rates)

    classes = Table(title="adapters (warm): median time to a verdict per class")
    for column in ("class", "n", "median s", "max s", "decided by"):
        classes.add_column(column)
    timings: dict[str, list[float]] = {}
    for rollout, result in zip(batch, scored):
        seconds = result.report.duration_s if result.report is not None else 0.0
        timings.setdefault(rollout.expected, []).append(seconds)
    rejected = [t for c, ts in timings.items() if c != "verified" for t in ts]
    for name, values in sorted(timings.items()):
        stages = sorted(
            {r.decided_by or "no candidate" for ro, r in zip(batch, scored) if ro.expected == name}
        )
        classes.add_row(
            name,
            str(len(values)),
            f"{statistics.median(values):.3f}",
            f"{max(values):.3f}",
            ", ".join(stages),
        )
    console.print(classes)
    figures["median_s"] = {name: statistics.median(v) for name, v in timings.items()}
    figures["rejected_median_s"] = statistics.median(rejected) if rejected else None
    console.print(
        f"rejected (not verified) candidates: median "
        f"{figures['rejected_median_s']:.3f} s to a verdict"
    )

    adapter_verdicts = [r.verdict or "broken" for r in scored]
    mismatches = [
        (ro.name, ro.expected, a) for ro, a in zip(batch, adapter_verdicts) if a != ro.expected
    ]
    console.print(
        f"adapter verdicts as the batch's classes: {len(batch) - len(mismatches)} of "
        f"{len(batch)}" + (f"; differ: {mismatches}" if mismatches else "")
    )
    if full_verdicts:
        differ = [
            (ro.name, a, f) for ro, a, f in zip(batch, adapter_verdicts, full_verdicts) if a != f
        ]
        figures["identical_to_full"] = len(batch) - len(differ)
        console.print(
            f"adapter verdicts identical to the full verification's: "
            f"{len(batch) - len(differ)} of {len(batch)}"
            + (f"; differ: {differ}" if differ else "")
        )
    if naive_verdicts is not None:
        accepted = {
            c: sum(v == "pass" for ro, v in zip(batch, naive_verdicts) if ro.expected == c)
            for c in counts
        }
        figures["naive_accepted"] = accepted
        console.print(
            f"naive harness accepted (allclose at 1e-2, one seed): {accepted} (of {counts})"
        )
    figures["rewards"] = {ro.name: r.reward for ro, r in zip(batch, scored)}
    figures["verdicts"] = {
        ro.name: [a, f] for ro, a, f in zip(batch, adapter_verdicts, full_verdicts)
    }
    save()


if __name__ == "__main__":
    main()
