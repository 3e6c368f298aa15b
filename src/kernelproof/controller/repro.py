"""Minimal repros: shrink each kind of failure to its smallest failing shape, and write the
command and the standalone script that show it.

Shrinking reruns single cells through the live workers: for each knob, the smallest value
(from a short ascending list) at which the cell still fails the same way replaces the current
one. It is bounded in tries and seconds, so a slow candidate cannot stall the report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import Settings
from kernelproof.controller.matrix import MatrixRunner
from kernelproof.schema import Assumption, CorrectnessTest, InputVariant, Repro, VariantKind
from kernelproof.tasks.loaded import LoadedTask
from kernelproof.tasks.variants import ShapeGroup
from kernelproof.workers.pair import WorkerPair

#: Cells rerun per failure while shrinking, and the wall-clock cap on all shrinking.
MAX_SHRINK_TRIES = 16
MAX_SHRINK_S = 45.0

#: Failures shrunk per verification: one per inferred assumption, up to this many.
MAX_REPROS = 3

#: Small values tried first for every knob: sizes where bugs at edges show.
SMALL_VALUES = (1, 2, 3, 4, 5, 7, 8, 9, 16, 17)


@dataclass
class Shrinker:
    pair: WorkerPair
    loaded: LoadedTask
    policy: TolerancePolicy
    init_seed: int
    default_knobs: dict[str, int]
    settings: Settings
    base_seed: int
    started: float = 0.0

    def repros(self, tests: list[CorrectnessTest], assumptions: list[Assumption]) -> list[Repro]:
        self.started = time.monotonic()
        by_name = {t.variant.name: t for t in tests}
        chosen = []
        for assumption in assumptions:
            first = next((by_name[v] for v in assumption.variants if v in by_name), None)
            if first is not None and first not in chosen:
                chosen.append(first)
        return [self._repro(test) for test in chosen[:MAX_REPROS]]

    def _repro(self, failing: CorrectnessTest) -> Repro:
        knobs = {**self.default_knobs, **failing.variant.knobs}
        detail, steps, tries = failing.message, 0, 0
        for name in sorted(knobs, key=lambda k: -knobs[k]):
            for value in smaller_values(knobs[name]):
                if tries >= MAX_SHRINK_TRIES or time.monotonic() - self.started > MAX_SHRINK_S:
                    break
                tries += 1
                trial = {**knobs, name: value}
                outcome = self._run(failing.variant, trial)
                if outcome is not None and outcome.outcome is failing.outcome:
                    knobs, detail, steps = trial, outcome.message or detail, steps + 1
                    break
        variant = failing.variant
        return Repro(
            failure=variant.name,
            knobs=knobs,
            seed=variant.seed,
            value=variant.value.value if variant.value else None,
            layout=variant.layout.value if variant.layout else None,
            detail=detail[:600],
            shrink_steps=steps,
            command=repro_command(self.loaded, knobs, variant, self.settings, self.base_seed),
            script=repro_script(
                self.loaded, knobs, variant, self.init_seed, self.policy, self.settings.mode
            ),
        )

    def _run(self, variant: InputVariant, knobs: dict[str, int]) -> CorrectnessTest | None:
        if self.pair.candidate_death is not None and not self.pair.start_candidate().ok:
            return None
        changed = {k: v for k, v in knobs.items() if v != self.default_knobs.get(k)}
        cell = variant.model_copy(
            update={"knobs": changed, "kind": VariantKind.SHAPE, "name": f"shrink:{changed}"}
        )
        group = ShapeGroup(label=cell.name, knobs=knobs, variants=[cell])
        runner = MatrixRunner(pair=self.pair, policy=self.policy, init_seed=self.init_seed)
        tests = runner.run([group]).tests
        return tests[0] if tests else None


def smaller_values(value: int) -> list[int]:
    """Values below ``value`` to try, ascending: the small edge sizes, a half, a quarter."""
    options = {v for v in SMALL_VALUES if v < value} | {value // 2, value // 4}
    return sorted(v for v in options if 1 <= v < value)


def repro_command(
    loaded: LoadedTask,
    knobs: dict[str, int],
    variant: InputVariant,
    settings: Settings,
    base_seed: int,
) -> str:
    """One command that reruns exactly this cell (plus the cheap value and layout variants):
    the run's own settings and base seed (which fixes the weights), at the shrunk knobs, on
    the failing input seed, with no other shapes and no timing."""
    from kernelproof.report.commands import settings_command

    reference = loaded.task.path.parent if loaded.format == "gpumode" else loaded.task.path
    cell = settings.model_copy(
        update={
            "default_knobs": knobs,
            "input_seeds": [variant.seed],
            "seeds": 1,
            "shape_variants": False,
            "timing": False,
        }
    )
    return settings_command(
        str(reference), str(loaded.candidate_file), base_seed, cell.model_dump(mode="json")
    ).text


_SCRIPT = '''"""Standalone repro written by kernelproof: {failure} -> {detail_line}

Run it with the same Python environment: python this_file.py
It builds the task at the shrunk knobs, gives the reference and the candidate the same weights
and the same seeded inputs, and compares both with a float64 run of the reference.
"""

import importlib.util
import random
import sys
import types

import numpy
import torch

KNOBS = {knobs!r}
SEED = {seed}
INIT_SEED = {init_seed}
VALUE = {value!r}  # None, "scale-1e3", "scale-1e-3", "shift" or "inf-nan"
LAYOUT = {layout!r}  # None, "non-contiguous" or "storage-offset"
MODE = {mode!r}  # "as-built" keeps each module's own training flag; "eval" or "train" sets it
TOLERANCE_FACTOR = {factor}
CANDIDATE_FILE = {candidate_file!r}
CANDIDATE_SOURCE = {candidate_source!r}  # used instead of the file when not None
TASK_SOURCE = {task_source!r}


def seed_everything(seed):
    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def module(name, source, path):
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    exec(compile(source, path, "exec"), mod.__dict__)
    return mod


task = module("repro_task", TASK_SOURCE, {task_path!r})
if CANDIDATE_SOURCE is None:
    spec = importlib.util.spec_from_file_location("repro_candidate", CANDIDATE_FILE)
    candidate = importlib.util.module_from_spec(spec)
    sys.modules["repro_candidate"] = candidate
    spec.loader.exec_module(candidate)
else:
    candidate = module("repro_candidate", CANDIDATE_SOURCE, "repro_candidate.py")

init = task.get_init_inputs()
seed_everything(INIT_SEED)
reference = task.Model(*init)
seed_everything(INIT_SEED)
model = candidate.ModelNew(*init)
for built in (reference, model):
    if isinstance(built, torch.nn.Module) and MODE != "as-built":
        built.train(MODE == "train")
if isinstance(model, torch.nn.Module) and isinstance(reference, torch.nn.Module):
    own, theirs = model.state_dict(), reference.state_dict()
    with torch.no_grad():
        for name, tensor in own.items():
            if name in theirs and theirs[name].shape == tensor.shape:
                tensor.copy_(theirs[name])

seed_everything(SEED)
inputs = list(task.get_inputs())
floating = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]
if VALUE == "inf-nan" and floating:
    x = inputs[floating[0]].clone()
    where = torch.randperm(x.numel(), generator=torch.Generator().manual_seed(SEED))[:3].tolist()
    for position, special in zip(where, (float("inf"), float("nan"), float("-inf"))):
        x.view(-1)[position] = special
    inputs[floating[0]] = x
for i in floating if VALUE in ("scale-1e3", "scale-1e-3", "shift") else []:
    inputs[i] = {{"scale-1e3": inputs[i] * 1e3, "scale-1e-3": inputs[i] * 1e-3,
                 "shift": inputs[i] + 100.0}}[VALUE]


def relayout(x):
    if not isinstance(x, torch.Tensor) or x.numel() == 0 or LAYOUT is None:
        return x
    poison = float("nan") if x.is_floating_point() else 0
    if LAYOUT == "storage-offset":
        storage = torch.full((x.numel() + 3,), poison, dtype=x.dtype)
        view = storage[3:].view(x.shape)
        view.copy_(x)
        return view
    if x.dim() >= 2 and x.shape[-1] > 1 and x.shape[-2] > 1:
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    wide = torch.full((*x.shape[:-1], 2 * x.shape[-1]), poison, dtype=x.dtype)
    wide[..., ::2] = x
    return wide[..., ::2]


inputs = [relayout(x) for x in inputs]
with torch.no_grad():
    expected = reference(*inputs)
    got = model(*inputs)
    oracle_model = reference.double() if isinstance(reference, torch.nn.Module) else reference
    oracle = oracle_model(*[x.double() if isinstance(x, torch.Tensor) and x.is_floating_point()
                            else x for x in inputs])
as_list = lambda v: list(v) if isinstance(v, (tuple, list)) else [v]
failed = False
for index, (e, g, o) in enumerate(zip(as_list(expected), as_list(got), as_list(oracle))):
    if g.shape != e.shape or g.dtype != e.dtype:
        print(f"output {{index}}: candidate {{tuple(g.shape)}} {{g.dtype}}, reference "
              f"{{tuple(e.shape)}} {{e.dtype}}")
        failed = True
        continue
    if not e.is_floating_point():
        wrong = int((g != o.to(g.dtype)).sum())
        print(f"output {{index}}: {{wrong}} of {{g.numel()}} elements differ")
        failed |= wrong > 0
        continue
    finite = torch.isfinite(e) & torch.isfinite(o)
    spurious = int((finite & ~torch.isfinite(g)).sum())
    mask = finite & torch.isfinite(g)
    if not bool(mask.any()):
        print(f"output {{index}}: {{spurious}} spurious NaN/Inf, no finite element to compare")
        failed |= spurious > 0
        continue
    scale = float(o[mask].double().pow(2).mean().sqrt()) or 1.0
    cand = float((g[mask].double() - o[mask]).pow(2).mean().sqrt()) / scale
    ref = float((e[mask].double() - o[mask]).pow(2).mean().sqrt()) / scale
    floor = 256 * torch.finfo(e.dtype).eps
    ratio = cand / max(ref, floor)
    print(f"output {{index}}: relative RMS error {{cand:.3g}} (reference {{ref:.3g}}), "
          f"ratio {{ratio:.3g}}, {{spurious}} spurious NaN/Inf")
    failed |= spurious > 0 or ratio > TOLERANCE_FACTOR
print("REPRODUCED: the candidate is wrong here" if failed else "not reproduced")
sys.exit(1 if failed else 0)
'''


def repro_script(
    loaded: LoadedTask,
    knobs: dict[str, int],
    variant: InputVariant,
    init_seed: int,
    policy: TolerancePolicy,
    mode: str = "as-built",
) -> str:
    """A self-contained script (torch and numpy only) that shows the failure."""
    wrapped = loaded.format != "kernelbench"
    return _SCRIPT.format(
        failure=variant.name,
        detail_line="see the report for the comparison",
        knobs=knobs,
        seed=variant.seed,
        init_seed=init_seed,
        value=variant.value.value if variant.value else None,
        layout=variant.layout.value if variant.layout else None,
        mode=mode,
        factor=policy.factor,
        candidate_file=str(Path(loaded.candidate_file).resolve()),
        candidate_source=Path(loaded.candidate_path).read_text() if wrapped else None,
        task_source=loaded.task.render(knobs),
        task_path=str(loaded.task.path),
    )
