"""The suite a server serves: its tasks by name, and the identity of a submission to one.

The controller never runs candidate code; neither does the catalog. It reads a submission as
text through the task's own format (so a candidate without its entry point is refused at once,
with the format's message) and hashes it the way the results store's resume lookup does.
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelproof.config import resolve_settings
from kernelproof.errors import KernelproofError, UsageError
from kernelproof.schema.suite import BenchTask
from kernelproof.serve.queue import SubmissionIdentity
from kernelproof.store.results import settings_hash
from kernelproof.suite.layout import read_suite

__all__ = ["SuiteCatalog", "UnknownTask", "candidate_file_name"]

#: Identities remembered by (task, source hash): a burst of identical submissions (a retry
#: loop, a team sharing a kernel) is parsed once. Deterministic, so caching cannot change one.
IDENTITY_CACHE_SIZE = 1024


class UnknownTask(KernelproofError, LookupError):
    """A task name the suite does not have."""


def candidate_file_name(submission_id: int) -> str:
    """The file a submission's source is written to for its verification."""
    return f"submission_{submission_id}.py"


@dataclass
class SuiteCatalog:
    """The tasks of ``suite`` and the settings every submission is verified with."""

    suite: Path
    profile: str = "default"
    overrides: dict[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    layout: str = ""
    tasks: dict[str, BenchTask] = field(default_factory=dict)
    _identities: OrderedDict[tuple[str, str], SubmissionIdentity] = field(
        default_factory=OrderedDict, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def read(
        cls,
        suite: Path,
        profile: str = "default",
        overrides: dict[str, Any] | None = None,
        fingerprint: str = "",
    ) -> SuiteCatalog:
        """Read the suite's tasks (a :class:`UsageError` for a folder that is no suite) and
        check the settings once, so a bad profile fails at start, not per submission."""
        suite = suite.resolve()
        layout, tasks = read_suite(suite, suite)
        if not tasks:
            raise UsageError(f"{suite}: the suite has no tasks to serve")
        resolve_settings(profile=profile, overrides=overrides)
        return cls(
            suite=suite,
            profile=profile,
            overrides=dict(overrides or {}),
            fingerprint=fingerprint,
            layout=layout,
            tasks={t.key: t for t in tasks},
        )

    def task(self, key: str) -> BenchTask:
        """The task named ``key``; :class:`UnknownTask` listing a few known names otherwise."""
        task = self.tasks.get(key)
        if task is None:
            known = ", ".join(list(self.tasks)[:5])
            raise UnknownTask(
                f"no task {key!r} in the suite {self.suite.name}; GET /api/tasks "
                f"lists the {len(self.tasks)} tasks (e.g. {known})"
            )
        return task

    def identity(self, key: str, source: str) -> SubmissionIdentity:
        """The identity of ``source`` submitted to task ``key``. A candidate its task's format
        refuses (no entry point, a syntax error) raises :class:`CandidateFormatError`."""
        task = self.task(key)
        cache_key = (key, hashlib.sha256(source.encode()).hexdigest())
        with self._lock:
            if cache_key in self._identities:
                self._identities.move_to_end(cache_key)
                return self._identities[cache_key]
        identity = self._identity(task, source)
        with self._lock:
            self._identities[cache_key] = identity
            while len(self._identities) > IDENTITY_CACHE_SIZE:
                self._identities.popitem(last=False)
        return identity

    def _identity(self, task: BenchTask, source: str) -> SubmissionIdentity:
        from kernelproof.tasks.formats import load_task

        with tempfile.TemporaryDirectory(prefix="kernelproof-serve-") as scratch:
            candidate = Path(scratch) / "submission.py"
            candidate.write_text(source, encoding="utf-8")
            loaded = load_task(task.reference, candidate, Path(scratch) / "wrapped")
        settings = resolve_settings(
            profile=self.profile, task_policy=loaded.task.policy, overrides=self.overrides
        )
        return SubmissionIdentity(
            candidate_sha256=hashlib.sha256(loaded.candidate_text.encode()).hexdigest(),
            reference_sha256=loaded.task.sha256,
            settings_hash=settings_hash(settings.model_dump(mode="json")),
            fingerprint=self.fingerprint,
        )
