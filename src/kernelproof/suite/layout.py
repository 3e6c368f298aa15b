"""Reading a suite: which tasks it has and which solutions go with each.

Three layouts, each an adapter that answers "is this folder yours?":

* KernelBench: ``levelN/ID_Name.py``; solutions ``levelN/ID_anything.py`` (one sample) or
  ``levelN/ID/*.py`` (several samples), matched by level and problem id;
* GPU MODE: one folder per problem holding ``reference.py`` and ``task.yml``; solutions
  ``PROBLEM/*.py`` or ``PROBLEM.py`` (or ``submission*.py`` inside the problem folder);
* native: one folder per task holding ``reference.py``; solutions ``TASK/*.py`` or ``TASK.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from kernelproof.errors import UsageError
from kernelproof.schema.suite import BenchItem, BenchTask

_LEVEL = re.compile(r"^level(\d+)$")
_PROBLEM = re.compile(r"^(\d+)_.+\.py$")


def _level_number(folder: Path) -> int | None:
    """N of a KernelBench ``levelN`` folder; None for any other folder."""
    match = _LEVEL.match(folder.name)
    return int(match.group(1)) if match else None


class SuiteLayout(Protocol):
    name: str

    def accepts(self, suite: Path) -> bool: ...

    def tasks(self, suite: Path, solutions: Path) -> list[BenchTask]: ...


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


class KernelBenchLayout:
    name = "kernelbench"

    def accepts(self, suite: Path) -> bool:
        return any(
            _LEVEL.match(d.name) and any(_PROBLEM.match(f.name) for f in d.glob("*.py"))
            for d in suite.iterdir()
            if d.is_dir()
        )

    def tasks(self, suite: Path, solutions: Path) -> list[BenchTask]:
        found = []
        levels = [
            (number, d)
            for d in suite.iterdir()
            if d.is_dir() and (number := _level_number(d)) is not None
        ]
        for level, level_dir in sorted(levels, key=lambda pair: pair[0]):
            for task in sorted(level_dir.glob("*.py"), key=_problem_number):
                match = _PROBLEM.match(task.name)
                if not match:
                    continue
                problem = match.group(1)
                found.append(
                    BenchTask(
                        key=f"{level_dir.name}/{task.stem}",
                        reference=task,
                        level=level,
                        problem=problem,
                        candidates=tuple(self._solutions(solutions / level_dir.name, problem)),
                    )
                )
        return found

    @staticmethod
    def _solutions(folder: Path, problem: str) -> list[Path]:
        if not folder.is_dir():
            return []
        samples = folder / problem
        if samples.is_dir():
            return _python_files(samples)
        return [p for p in _python_files(folder) if p.name.split("_", 1)[0] == problem]


def _problem_number(path: Path) -> tuple[int, str]:
    match = _PROBLEM.match(path.name)
    return (int(match.group(1)) if match else 1 << 30, path.name)


class GpuModeLayout:
    name = "gpumode"

    def accepts(self, suite: Path) -> bool:
        return any(
            (d / "task.yml").is_file() and (d / "reference.py").is_file()
            for d in suite.iterdir()
            if d.is_dir()
        )

    def tasks(self, suite: Path, solutions: Path) -> list[BenchTask]:
        found = []
        for folder in sorted(d for d in suite.iterdir() if (d / "task.yml").is_file()):
            candidates = _named_solutions(solutions, folder.name)
            if not candidates and solutions.resolve() == suite.resolve():
                candidates = sorted(folder.glob("submission*.py"))
            found.append(
                BenchTask(
                    key=f"gpumode/{folder.name}",
                    reference=folder,
                    level=None,
                    problem=folder.name,
                    candidates=tuple(candidates),
                )
            )
        return found


class NativeLayout:
    name = "native"

    def accepts(self, suite: Path) -> bool:
        return any(
            (d / "reference.py").is_file() and not (d / "task.yml").exists()
            for d in suite.iterdir()
            if d.is_dir()
        )

    def tasks(self, suite: Path, solutions: Path) -> list[BenchTask]:
        return [
            BenchTask(
                key=f"native/{folder.name}",
                reference=folder / "reference.py",
                level=None,
                problem=folder.name,
                candidates=tuple(_named_solutions(solutions, folder.name)),
            )
            for folder in sorted(
                d
                for d in suite.iterdir()
                if (d / "reference.py").is_file() and not (d / "task.yml").exists()
            )
        ]


def _named_solutions(solutions: Path, name: str) -> list[Path]:
    folder, single = solutions / name, solutions / f"{name}.py"
    if folder.is_dir():
        return [p for p in _python_files(folder) if p.name != "reference.py"]
    return [single] if single.is_file() else []


LAYOUTS: tuple[SuiteLayout, ...] = (KernelBenchLayout(), GpuModeLayout(), NativeLayout())


def read_suite(suite: Path, solutions: Path) -> tuple[str, list[BenchTask]]:
    """The layout's name and the suite's tasks. A folder that no layout, or more than one,
    recognises is a usage error with a description of the layouts."""
    if not suite.is_dir():
        raise UsageError(f"{suite}: the suite folder does not exist")
    if not solutions.is_dir():
        raise UsageError(f"{solutions}: the solutions folder does not exist")
    matching = [layout for layout in LAYOUTS if layout.accepts(suite)]
    if len(matching) != 1:
        what = (
            "no known layout"
            if not matching
            else ("several layouts at once (" + ", ".join(m.name for m in matching) + ")")
        )
        raise UsageError(
            f"{suite}: {what}. Use levelN/ID_Name.py (KernelBench), one folder per problem with "
            "reference.py and task.yml (GPU MODE), or one folder per task with reference.py "
            "(native)."
        )
    return matching[0].name, matching[0].tasks(suite, solutions)


def bench_items(tasks: list[BenchTask]) -> list[BenchItem]:
    return [
        BenchItem(task=task, candidate=candidate, sample=index)
        for task in tasks
        for index, candidate in enumerate(task.candidates)
    ]
