"""What a task format produces, and the contract every format meets.

Shared by :mod:`kernelproof.tasks.formats` (the registry) and the adapters it lists
(:mod:`kernelproof.tasks.gpumode`), so that neither imports the other's module to get them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kernelproof.tasks.source import TaskSource


@dataclass(frozen=True)
class LoadedTask:
    """A task and candidate ready for the workers."""

    task: TaskSource
    """KernelBench-format text (the file itself, or a generated wrapper)."""

    candidate_path: Path
    """The file the candidate worker imports (the candidate itself, or a wrapper)."""

    candidate_text: str
    """The candidate's own source, for the static scan, hashes and line counts."""

    candidate_file: Path
    """The candidate's own file (what the user named)."""

    readable_paths: list[str] = field(default_factory=list)
    """Files and folders the candidate worker may read besides its own (a wrapped task's
    sources), so that the file-access audit does not flag the wrapper's own imports."""

    format: str = "kernelbench"
    """Which format loaded it: ``kernelbench`` or ``gpumode``."""

    notes: list[str] = field(default_factory=list)
    """What the format's adapter kept of the task in another form: the report shows each as
    an ``info`` ``task-format`` finding."""

    unhonoured: list[str] = field(default_factory=list)
    """What of the task the adapter could not honour (an entry not run, a field not passed):
    a ``warn`` ``task-format`` finding each."""


class TaskFormat(Protocol):
    """A task format: says whether it handles a reference, and loads it with a candidate."""

    name: str
    """Short name recorded in the report (``kernelbench``, ``gpumode``)."""

    def accepts(self, reference: Path) -> bool: ...

    def load(self, reference: Path, candidate: Path, scratch: Path) -> LoadedTask: ...
