"""A session: many verifications that share what depends only on the task.

A verification has a fixed cost a reviewer pays once and a reward loop pays thousands of
times: worker starts, the reference's runs, its float64 oracle, sizing. A :class:`Session`
keeps the forkserver (which has torch imported) and each task's reference worker warm, and
replays the reference's answers from a memo keyed by task, settings, seeds, torch and machine
(:mod:`kernelproof.workers.reference_memo`). Every candidate still gets a fresh sandboxed
worker of its own, and its report is the one a separate ``verify`` with the same seed gives.

Seeds. Answers are shared only between verifications with the same seeds. ``evaluate_many``
draws one base seed for its whole batch (unless ``base_seed`` is given). ``evaluate`` shares
one base seed per task for :attr:`Session.reseed_every` calls, then draws a new one, so a long
reward loop still meets fresh inputs. The timed inputs are drawn fresh in every verification
whatever the base seed (see ``controller/verify.py``).
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelproof.schema import Report
from kernelproof.workers.process import start_forkserver
from kernelproof.workers.reference_memo import TaskMemos

if TYPE_CHECKING:
    from kernelproof.store.results import ResultsStore

#: Calls of ``evaluate`` per task that share one base seed before a new one is drawn: the
#: reference's work is done once per this many candidates, and no input set lives longer.
RESEED_EVERY = 64


class Session:
    """Verify many candidates with the task-only work done once per task.

    ``profile`` and ``options`` (any :class:`kernelproof.config.Settings` field) are the
    defaults of every call; a call's own options win. Use it as a context manager, or call
    :meth:`close`, to stop the warm reference workers. Safe to use from several threads."""

    def __init__(
        self,
        *,
        profile: str = "default",
        reseed_every: int = RESEED_EVERY,
        store: str | ResultsStore | None = None,
        **options: Any,
    ) -> None:
        """``store``: a results store (or its URL) that keeps the reference's answers across
        sessions and processes (:mod:`kernelproof.store.answer_archive`); without one they
        live as long as the session."""
        if reseed_every < 1:
            raise ValueError(f"reseed_every must be at least 1, not {reseed_every}")
        self.profile = profile
        self.options = dict(options)
        self.reseed_every = reseed_every
        self.archive = None
        if store is not None:
            from kernelproof.store.answer_archive import AnswerArchive

            self.archive = AnswerArchive(store)
        self.memos = TaskMemos(archive=self.archive)
        self._root = Path(tempfile.mkdtemp(prefix="kernelproof-session-"))
        self._seeds: dict[str, tuple[int, int]] = {}
        """Per task text: its shared base seed and how many calls have used it."""
        self._lock = threading.Lock()
        self._closed = False
        # The forkserver imports torch while the caller imports the verifier and reads its
        # first task (a cold session's first verification: 8.0 s, of which 2.0 s waited on it).
        try:
            start_forkserver()
        except Exception:  # noqa: BLE001 - the first worker start reports what is wrong
            pass

    # -- the API ---------------------------------------------------------------------------

    def verify(self, reference: str | Path, candidate: str | Path, **options: Any) -> Report:
        """Verify a candidate file against a reference file, as ``kernelproof.verify`` does."""
        from kernelproof.controller.verify import verify

        if self._closed:
            raise RuntimeError("this Session is closed; open a new one")
        merged = {**self.options, **options}
        profile = merged.pop("profile", self.profile)
        return verify(reference, candidate, profile=profile, memos=self.memos, **merged)

    def evaluate(self, reference_src: str, candidate_src: str, **options: Any) -> Report:
        """Verify ``candidate_src`` (a ``ModelNew`` module as text) against
        ``reference_src`` (the task's text). Never raises for a bad candidate: it gets a
        verdict. Without ``base_seed``, the task's shared seed of this session is used."""
        if options.get("base_seed", self.options.get("base_seed")) is None:
            options = {**options, "base_seed": self._shared_seed(reference_src)}
        return self._evaluate(reference_src, candidate_src, options)

    def evaluate_many(
        self, reference_src: str, candidate_srcs: Iterable[str], **options: Any
    ) -> list[Report]:
        """Verify every candidate against one reference, with one base seed for the batch
        (drawn fresh unless ``base_seed`` is given), in order. Each report is the one a
        separate ``verify`` with that seed gives."""
        if options.get("base_seed", self.options.get("base_seed")) is None:
            options = {**options, "base_seed": secrets.randbits(31)}
        return [self._evaluate(reference_src, source, options) for source in candidate_srcs]

    def stats(self) -> dict[str, int]:
        """Memo hits and misses, tasks held and idle reference workers (for benchmarks)."""
        return self.memos.counts()

    def close(self) -> None:
        """Stop the warm reference workers and drop the memos. Idempotent."""
        self._closed = True
        self.memos.close()
        if self.archive is not None:
            self.archive.close()
        shutil.rmtree(self._root, ignore_errors=True)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers ---------------------------------------------------------------------------

    def _evaluate(self, reference_src: str, candidate_src: str, options: dict[str, Any]) -> Report:
        reference = self._reference_file(reference_src)
        folder = Path(tempfile.mkdtemp(prefix="candidate-", dir=self._root))
        try:
            candidate = folder / "candidate.py"
            candidate.write_text(candidate_src, encoding="utf-8")
            return self.verify(reference, candidate, **options)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _reference_file(self, reference_src: str) -> Path:
        """One file per reference text, at a stable path: the task's key includes its path.
        With a store, the path is the same in every session (under the cache folder), so
        that the answers a session stored serve the next one."""
        digest = hashlib.sha256(reference_src.encode()).hexdigest()[:24]
        root = self._root
        if self.archive is not None:
            from kernelproof.config import cache_dir

            root = cache_dir() / "session-tasks"
        path = root / "tasks" / digest / "reference.py"
        with self._lock:
            if not path.is_file():  # written whole, then renamed: other sessions read it
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_name(f".{secrets.token_hex(8)}.partial")
                partial.write_text(reference_src, encoding="utf-8")
                partial.replace(path)
        return path

    def _shared_seed(self, reference_src: str) -> int:
        digest = hashlib.sha256(reference_src.encode()).hexdigest()
        with self._lock:
            seed, uses = self._seeds.get(digest, (0, self.reseed_every))
            if uses >= self.reseed_every:
                seed, uses = secrets.randbits(31), 0
            self._seeds[digest] = (seed, uses + 1)
            return seed


_DEFAULT: Session | None = None
_DEFAULT_LOCK = threading.Lock()


def default_session() -> Session:
    """The process's own session, behind ``kernelproof.evaluate``: started on first use and
    closed when the interpreter exits."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            import atexit

            _DEFAULT = Session()
            atexit.register(_DEFAULT.close)
        return _DEFAULT
