"""Which task a reward item names: the reference's source text, a path, or a suite's key.

Trainers carry the task in a dataset column (TRL), ``ground_truth`` (veRL) or a label
(OpenRLHF). The reference is *trusted* code, run in a worker outside the candidate's
sandbox, so where it may come from is the caller's choice: the user's own dataset may hold
source text; a server takes only the keys of the suite it serves, never code from a request.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from kernelproof.errors import UsageError

__all__ = ["TaskBook", "TaskRef", "UnknownTask"]

#: Entry point of each task format's candidates.
KERNELBENCH_ENTRY_POINT = "ModelNew"
GPUMODE_ENTRY_POINT = "custom_kernel"


class UnknownTask(UsageError):
    """A reward item names no task this book may resolve."""


@dataclass(frozen=True)
class TaskRef:
    """A resolved task: its source text (a KernelBench file) or its path (any format)."""

    key: str
    """The suite's key, the path, or ``source:<sha256 prefix>`` for source text."""

    source: str | None = None
    path: Path | None = None
    entry_point: str = KERNELBENCH_ENTRY_POINT


@dataclass
class TaskBook:
    """Resolves task references. ``suite``: a suite folder whose keys are accepted
    (``level1/10_Softmax``); ``allow_source`` and ``allow_paths``: whether reference source
    text and paths on disk are accepted (both are for trusted callers only)."""

    suite: Path | None = None
    allow_source: bool = True
    allow_paths: bool = True
    named: dict[str, Path] = field(default_factory=dict)
    """Tasks by a name of the caller's choosing (``kernelproof mcp``'s task files), besides
    the suite's keys."""

    _keys: dict[str, Path] = field(default_factory=dict, repr=False)
    _resolved: dict[str, TaskRef] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.suite is not None:
            from kernelproof.suite.layout import read_suite

            _layout, tasks = read_suite(self.suite, self.suite)
            self._keys = {task.key: task.reference for task in tasks}
        self._keys.update(self.named)

    @property
    def keys(self) -> list[str]:
        return list(self._keys)

    def resolve(self, value: str) -> TaskRef:
        """The task ``value`` names; :class:`UnknownTask` saying what is accepted otherwise."""
        if not isinstance(value, str) or not value.strip():
            raise UnknownTask(f"a task must be a non-empty string, not {value!r}")
        cached = self._resolved.get(value)
        if cached is not None:
            return cached
        resolved = self._resolve(value)
        if len(self._resolved) < 4096:
            self._resolved[value] = resolved
        return resolved

    def _resolve(self, value: str) -> TaskRef:
        if "\n" in value:
            if not self.allow_source:
                raise UnknownTask(
                    "this scorer takes task names, not reference source text: "
                    f"send one of the suite's keys (e.g. {self._examples()})"
                )
            digest = hashlib.sha256(value.encode()).hexdigest()[:12]
            return TaskRef(key=f"source:{digest}", source=value)
        if value in self._keys:
            return self._path_ref(value, self._keys[value])
        if self.allow_paths:
            try:
                path = Path(value).expanduser()
            except RuntimeError:  # "~nobody-known": no home to expand, so no such path
                path = Path(value)
            if path.exists():
                return self._path_ref(str(path), path.resolve())
        accepted = [
            # The suite's folder name, never its path: a server's client has no business
            # knowing where the server keeps its files.
            f"a key of the suite {self.suite.name!r}"
            if self.suite
            else "one of the named tasks"
            if self._keys
            else None,
            "the reference's source text" if self.allow_source else None,
            "a path to a task file or folder" if self.allow_paths else None,
        ]
        raise UnknownTask(
            f"no task {value[:200]!r}: a task is "
            + " or ".join(a for a in accepted if a)
            + (f" (e.g. {self._examples()})" if self._keys else "")
        )

    def _path_ref(self, key: str, path: Path) -> TaskRef:
        from kernelproof.tasks.gpumode import GpuModeFormat

        if GpuModeFormat().accepts(path):
            return TaskRef(key=key, path=path, entry_point=GPUMODE_ENTRY_POINT)
        if path.is_file():  # a KernelBench file: by its text, so the session shares its seed
            return TaskRef(key=key, source=path.read_text(encoding="utf-8"), path=path)
        return TaskRef(key=key, path=path)

    def _examples(self) -> str:
        return ", ".join(list(self._keys)[:3]) or "level1/10_Softmax"
