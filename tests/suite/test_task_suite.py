"""The built-in task suite, levels 1 (single operators), 2 (fusions) and 3 (blocks): every task
is well formed and adequate, and every bundled honest solution is verified without suspicion.

The fast tests read the task files as text (as the controller does) and run each task once at
its smallest declared shape. The slow ones run the adequacy audit per task and a full
verification per solution (10-60 s each on a shared 2-core machine); C++ solutions build once
into ``TORCH_EXTENSIONS_DIR``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kernelproof.schema import Severity, Verdict
from kernelproof.tasks.source import read_candidate, read_task

TASKS = Path(__file__).resolve().parents[2] / "tasks"
LEVELS = ("level1", "level2", "level3")

#: Fewest tasks each level must hold (the issues' floors).
MINIMUM_TASKS = {"level1": 22, "level2": 10, "level3": 8}

#: Fewest honest solutions per group of levels (level 1's issue, then levels 2 and 3's).
MINIMUM_SOLUTIONS = {("level1",): 8, ("level2", "level3"): 7}

#: ``ID_Name.py``: a positive integer ID, an underscore, a name.
TASK_NAME = re.compile(r"^(?P<id>[1-9][0-9]*)_(?P<name>[A-Za-z0-9_]+)\.py$")

#: The bound note every task docstring carries: a line opening with the bound, then why.
BOUND_NOTE = re.compile(r"^(Memory|Compute)-bound: \S", re.MULTILINE)

#: The measured-time comment every task carries (filled in from a single-threaded run).
TIMING_COMMENT = re.compile(
    r"^# default forward: ~\d+(\.\d+)? ms on the 2-vCPU dev machine$", re.MULTILINE
)

#: Settings of the slow checks: two seeds from a fixed base seed, so a failure reproduces.
AUDIT = {"seeds": 2, "base_seed": 1}
VERIFY = {"seeds": 2, "base_seed": 1, "timing": False}


def _task_id(path: Path) -> int | None:
    match = TASK_NAME.match(path.name)
    return int(match["id"]) if match else None


def _task_files(level: str) -> list[Path]:
    return sorted((TASKS / level).glob("*.py"), key=lambda p: _task_id(p) or 0)


def _solutions(levels: tuple[str, ...] = LEVELS) -> list[Path]:
    return sorted(path for level in levels for path in (TASKS / "solutions" / level).glob("*.py"))


def _task_of(solution: Path) -> Path:
    """The task a solution solves: same level, same ID."""
    wanted = _task_id(solution)
    found = [p for p in _task_files(solution.parent.name) if _task_id(p) == wanted]
    assert len(found) == 1, f"{solution}: no single task with ID {wanted} in its level"
    return found[0]


def _label(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


ALL_TASKS = [path for level in LEVELS for path in _task_files(level)]


# -- fast: the files are well formed -------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_level_ids_run_from_one_without_gaps(level):
    files = list((TASKS / level).glob("*.py"))
    misnamed = [p.name for p in files if _task_id(p) is None]
    assert not misnamed, f"task files must be named ID_Name.py: {misnamed}"
    ids = sorted(_task_id(p) for p in files)
    assert ids == list(range(1, len(ids) + 1)), f"{level} IDs must be 1..N: {ids}"
    assert len(ids) >= MINIMUM_TASKS[level]


@pytest.mark.parametrize("path", ALL_TASKS, ids=_label)
def test_task_is_well_formed(path):
    task = read_task(path)  # parses; defines Model, get_inputs, get_init_inputs
    tree = ast.parse(task.text)
    docstring = ast.get_docstring(tree)
    assert docstring, "the task needs a module docstring"
    assert BOUND_NOTE.search(docstring), (
        "the docstring needs a note opening 'Memory-bound: ' or 'Compute-bound: ' and saying why"
    )
    assert TIMING_COMMENT.search(task.text), "missing '# default forward: ~N ms ...' comment"
    assert task.knobs, "a task needs shape knobs (top-level integer constants)"
    assert 3 <= len(task.shapes) <= 4, "SHAPES holds 3-4 settings (small, odd, large)"
    for shape in task.shapes:
        assert set(shape) <= set(task.knobs), f"SHAPES entry names unknown knobs: {shape}"
        assert all(isinstance(v, int) and v >= 1 for v in shape.values()), shape
    assert any(min(s.values()) == 1 for s in task.shapes), "SHAPES needs a small setting (a 1)"
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    assert "Model" in classes
    assert "manual_seed" not in task.text, "kernelproof seeds the task; do not seed inside it"


@pytest.mark.parametrize("path", ALL_TASKS, ids=_label)
def test_task_runs_at_its_smallest_declared_shape(path):
    """Trusted task code, run once here at its first SHAPES entry."""
    import torch

    from kernelproof.tasks.module import module_from_source

    task = read_task(path)
    knobs = dict(task.default_knobs, **task.shapes[0])
    module = module_from_source(task.render(knobs), path, f"suite_task_{_label(path)}")
    model = module.Model(*module.get_init_inputs()).eval()
    with torch.no_grad():
        out = model(*module.get_inputs())
    outputs = out if isinstance(out, (tuple, list)) else [out]
    assert outputs and all(isinstance(o, torch.Tensor) for o in outputs)


@pytest.mark.parametrize("levels", list(MINIMUM_SOLUTIONS), ids="+".join)
def test_enough_solutions(levels):
    assert len(_solutions(levels)) >= MINIMUM_SOLUTIONS[levels]


@pytest.mark.parametrize("solution", _solutions(), ids=_label)
def test_solution_names_its_task_and_defines_modelnew(solution):
    assert TASK_NAME.match(solution.name), solution
    _task_of(solution)
    read_candidate(solution)  # parses and defines ModelNew


# -- slow: adequacy and honest verification ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", ALL_TASKS, ids=_label)
def test_task_is_adequate(path):
    from kernelproof.controller.audit_task import audit_task

    report = audit_task(path, **AUDIT)
    assert report.adequate, "; ".join(report.problems)


@pytest.mark.slow
@pytest.mark.parametrize("solution", _solutions(), ids=_label)
def test_solution_is_verified_without_suspicion(solution):
    from kernelproof.controller.verify import verify

    report = verify(_task_of(solution), solution, **VERIFY)
    flagged = [
        f"[{f.severity.value}] {f.check}: {f.message[:400]}"
        for f in report.findings
        if f.severity in (Severity.SUSPECT, Severity.FAIL)
    ]
    assert not flagged, "\n".join(flagged)
    assert report.verdict is Verdict.VERIFIED, report.summary
