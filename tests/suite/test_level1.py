"""The built-in task suite, level 1 (single operators): every task is well formed and adequate,
and every bundled honest solution is verified without suspicion.

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

from kernelproof.tasks.source import read_candidate, read_task

LEVEL = Path(__file__).resolve().parents[2] / "tasks" / "level1"
SOLUTIONS = LEVEL.parent / "solutions" / "level1"

#: Fewest tasks and honest solutions the level must hold (the issue's floor).
MINIMUM_TASKS = 22
MINIMUM_SOLUTIONS = 8

#: ``ID_Name.py``: a positive integer ID, an underscore, a name.
FILE_NAME = re.compile(r"^(?P<id>[1-9][0-9]*)_(?P<name>[A-Za-z0-9_]+)\.py$")

#: The bound note every task docstring carries, and the reason after it.
BOUND_NOTE = re.compile(r"^(Memory|Compute)-bound: \S.*$", re.MULTILINE)

#: The measured-time comment every task carries (from a single-threaded run).
TIMING_COMMENT = re.compile(r"^# default forward: ~\d+(\.\d+)? ms on the 2-vCPU dev machine$",
                            re.MULTILINE)

#: Settings of the slow checks: two seeds from a fixed base seed, so a failure reproduces.
AUDIT = {"seeds": 2, "base_seed": 1}
VERIFY = {"seeds": 2, "base_seed": 1, "timing": False}


def _id(path: Path) -> int:
    match = FILE_NAME.match(path.name)
    assert match, f"{path.name}: not named ID_Name.py"
    return int(match["id"])


TASKS = sorted(LEVEL.glob("*.py"), key=_id)
SOLUTION_FILES = sorted(SOLUTIONS.glob("*.py"), key=_id)


def _task_of(solution: Path) -> Path:
    found = [task for task in TASKS if _id(task) == _id(solution)]
    assert len(found) == 1, f"{solution.name}: no single level-1 task with ID {_id(solution)}"
    return found[0]


# -- fast: the files are well formed -------------------------------------------------------


def test_ids_run_from_one_without_gaps():
    assert len(TASKS) >= MINIMUM_TASKS
    ids = [_id(task) for task in TASKS]
    assert ids == list(range(1, len(ids) + 1)), ids


@pytest.mark.parametrize("task", TASKS, ids=lambda p: p.stem)
def test_task_is_well_formed(task):
    source = read_task(task)  # parses; defines Model, get_inputs, get_init_inputs
    tree = ast.parse(source.text)
    defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert {"Model", "get_inputs", "get_init_inputs"} <= defined
    docstring = ast.get_docstring(tree) or ""
    assert BOUND_NOTE.search(docstring), "the docstring needs a 'Memory-bound: why' line"
    assert TIMING_COMMENT.search(source.text), "the default forward time comment is missing"
    assert source.knobs, "a task needs top-level integer shape knobs"
    assert 3 <= len(source.shapes) <= 4, "SHAPES holds 3-4 settings: small, odd, large"
    for shape in source.shapes:
        assert set(shape) <= set(source.knobs), f"SHAPES entry {shape} names unknown knobs"
        assert all(isinstance(v, int) and v >= 1 for v in shape.values()), shape
    assert "manual_seed" not in source.text, "kernelproof seeds; tasks do not"


@pytest.mark.parametrize("task", TASKS, ids=lambda p: p.stem)
def test_task_runs_at_its_smallest_declared_shape(task):
    """Trusted task code, run once here at the first (size-1) SHAPES entry."""
    import torch

    from kernelproof.tasks.module import module_from_source

    source = read_task(task)
    knobs = dict(source.default_knobs, **source.shapes[0])
    module = module_from_source(source.render(knobs), task, f"level1_task_{task.stem}")
    model = module.Model(*module.get_init_inputs()).eval()
    with torch.no_grad():
        out = model(*module.get_inputs())
    outputs = out if isinstance(out, (tuple, list)) else [out]
    assert outputs and all(isinstance(o, torch.Tensor) for o in outputs)


def test_there_are_enough_solutions():
    assert len(SOLUTION_FILES) >= MINIMUM_SOLUTIONS


@pytest.mark.parametrize("solution", SOLUTION_FILES, ids=lambda p: p.stem)
def test_solution_names_its_task_and_defines_modelnew(solution):
    _task_of(solution)
    read_candidate(solution)


# -- slow: adequacy and honest verification ------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS, ids=lambda p: p.stem)
def test_task_is_adequate(task):
    from kernelproof.controller.audit_task import audit_task

    report = audit_task(task, **AUDIT)
    assert report.adequate, report.problems


@pytest.mark.slow
@pytest.mark.parametrize("solution", SOLUTION_FILES, ids=lambda p: p.stem)
def test_solution_is_verified_without_suspicion(solution):
    from kernelproof.controller.verify import verify

    report = verify(_task_of(solution), solution, **VERIFY)
    flagged = [
        f"[{f.severity.value}] {f.check}: {f.message[:400]}"
        for f in report.findings
        if f.severity.value in ("suspect", "fail")
    ]
    assert not flagged, "\n".join(flagged)
    assert report.verdict.value == "verified", report.summary
