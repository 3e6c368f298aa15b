"""Scoring a batch of (task, completion) pairs: concurrently, in order, within a deadline.

Every adapter (TRL, veRL, the server's reward endpoint, a plain loop) goes through a
:class:`BatchScorer`:

1. each completion's candidate is taken by :func:`~kernelproof.rl.completion.extract_candidate`
   (no candidate: reward 0 and the reason, no verification);
2. identical (task, candidate) pairs are verified once (a GRPO group often repeats itself);
3. the rest run concurrently through one warm :class:`kernelproof.Session` (``jobs``
   verifications in flight), or on Ray actors that each hold a Session, with fail-fast
   scoring (profile ``rl``);
4. the batch never blocks past its deadline: each verification gets what is left of it (no
   candidate request outlives it), and a pair still unscored at the deadline gets 0 and the
   reason ``deadline``;
5. rewards come back in the input order, shaped by :class:`~kernelproof.rl.shaping.RewardShaping`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kernelproof.rl.completion import Extraction, extract_candidate
from kernelproof.rl.shaping import RewardShaping
from kernelproof.rl.tasks import TaskBook, TaskRef, UnknownTask
from kernelproof.schema import Report

__all__ = ["BatchScorer", "DEFAULT_DEADLINE_S", "Scored"]

#: Seconds a batch may take unless the caller says otherwise: a trainer's step must not wait
#: on one candidate's 40-second C++ build more than it has to; long enough for a batch of 64
#: on two cores (benchmarks/rl_batch.py).
DEFAULT_DEADLINE_S = 300.0

#: Seconds past the deadline the batch waits for verifications to wind down (each is cut at
#: the deadline; its report still has to be written), before it answers without them.
DEADLINE_GRACE_S = 2.0

#: What a reported reason may hold at most (it goes back to the trainer's logs).
MAX_REASON_CHARS = 500

#: Keeps a report somewhere and returns its id (a store's verification id, a file name).
ReportKeeper = Callable[[TaskRef, Report], "str | None"]


@dataclass
class Scored:
    """The outcome of one (task, completion) pair."""

    reward: float
    verdict: str | None
    """The verification's verdict; None when nothing was verified (no candidate, an
    unknown task, the deadline)."""

    reason: str | None
    """Why the reward is what it is, in one sentence: the report's summary, the reason no
    candidate could be taken, or the deadline."""

    extraction: Extraction
    decided_by: str | None = None
    """The stage that decided the verdict (``build``, ``first-input``, ``matrix``...)."""

    report: Report | None = None
    report_id: str | None = None
    seconds: float = 0.0
    """Wall time from the batch's start until this pair's result was in."""

    def as_dict(self) -> dict[str, Any]:
        """The JSON-ready summary (no report): what adapters log and the server answers."""
        return {
            "reward": self.reward,
            "verdict": self.verdict,
            "reason": self.reason,
            "decided_by": self.decided_by,
            "report_id": self.report_id,
            "extracted": self.extraction.ok,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class _Job:
    task: TaskRef
    source: str
    indexes: list[int] = field(default_factory=list)


class BatchScorer:
    """Scores batches of (task, completion) pairs; see the module's docstring.

    ``profile`` and ``options``: the verification's settings (any
    :class:`kernelproof.config.Settings` field). ``jobs``: verifications in flight at once
    (default: the machine's cores). ``tasks``: how task references resolve (default: source
    text or paths). ``ray``: run on Ray actors (``"local"`` starts a cluster, else its
    address). ``session``: a Session to share (otherwise the scorer opens its own).
    ``keep_report``: stores each report and returns its id. ``multiple``: see
    :func:`extract_candidate`."""

    def __init__(
        self,
        *,
        profile: str = "rl",
        shaping: RewardShaping | None = None,
        deadline_s: float = DEFAULT_DEADLINE_S,
        jobs: int | None = None,
        tasks: TaskBook | None = None,
        ray: str | None = None,
        session: Any = None,
        keep_report: ReportKeeper | None = None,
        multiple: Literal["refuse", "last"] = "refuse",
        **options: Any,
    ) -> None:
        if deadline_s <= 0:
            raise ValueError(f"deadline_s must be positive, not {deadline_s}")
        self.profile = profile
        self.shaping = shaping or RewardShaping()
        self.deadline_s = deadline_s
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.tasks = tasks or TaskBook()
        self.keep_report = keep_report
        self.multiple = multiple
        self.options = {**options, **self.shaping.settings()}
        from kernelproof.config import resolve_settings

        resolve_settings(profile=profile, overrides=self.options)  # bad settings fail now
        self._own_session = session is None and ray is None
        self._session = session
        self._ray = None
        if ray is not None:
            from kernelproof.rl.ray_verifiers import RayVerifiers

            self._ray = RayVerifiers(address=None if ray == "local" else ray, jobs=jobs)
        self._pool = ThreadPoolExecutor(
            max_workers=self.jobs, thread_name_prefix="kernelproof-reward"
        )
        self._scratch = Path(tempfile.mkdtemp(prefix="kernelproof-rewards-"))
        self._lock = threading.Lock()

    # -- the API -------------------------------------------------------------------------------

    def score(
        self, items: Sequence[tuple[str, Any]], *, deadline_s: float | None = None
    ) -> list[Scored]:
        """Score ``items``, pairs of (task, completion), and return one :class:`Scored` per
        pair in the same order, within ``deadline_s`` (default: the scorer's). A completion
        is text, conversational messages, or an :class:`Extraction` already made."""
        started = time.monotonic()
        deadline = started + (deadline_s if deadline_s is not None else self.deadline_s)
        results: list[Scored | None] = [None] * len(items)
        jobs: dict[tuple[str, str], _Job] = {}
        extractions: list[Extraction] = []
        for index, (task_value, completion) in enumerate(items):
            try:
                task = self.tasks.resolve(task_value)
            except UnknownTask as exc:
                extraction = Extraction(None, str(exc))
                extractions.append(extraction)
                results[index] = Scored(0.0, None, _short(str(exc)), extraction)
                continue
            # An adapter that already knows there is no completion (a query without its
            # prompt) hands over its refusal as an Extraction.
            extraction = (
                completion
                if isinstance(completion, Extraction)
                else extract_candidate(
                    completion, entry_point=task.entry_point, multiple=self.multiple
                )
            )
            extractions.append(extraction)
            if not extraction.ok:
                results[index] = Scored(
                    self.shaping.reward(None, extracted=False),
                    None,
                    _short(f"no candidate: {extraction.reason}"),
                    extraction,
                )
                continue
            assert extraction.source is not None
            jobs.setdefault(
                (task.key, extraction.source), _Job(task, extraction.source)
            ).indexes.append(index)
        seed = secrets.randbits(31)
        futures = {self._submit(job, deadline, seed): job for job in jobs.values()}
        finished: dict[Future[Report], float] = {}
        for future in futures:
            future.add_done_callback(lambda f: finished.setdefault(f, time.monotonic()))
        done, late = wait(futures, timeout=max(0.0, deadline - time.monotonic()) + DEADLINE_GRACE_S)
        for future in late:
            future.cancel()
        for future, job in futures.items():
            elapsed = finished.get(future, time.monotonic()) - started
            report = None
            if future in done and not future.cancelled() and future.exception() is None:
                report = future.result()
            for index in job.indexes:
                results[index] = self._scored(
                    report, job, extractions[index], elapsed, deadline_s or self.deadline_s, future
                )
        assert all(r is not None for r in results)
        return results  # type: ignore[return-value]  # every slot is filled: asserted above

    def rewards(self, items: Sequence[tuple[str, Any]], **kwargs: Any) -> list[float]:
        """Only the rewards of :meth:`score`."""
        return [scored.reward for scored in self.score(items, **kwargs)]

    def close(self) -> None:
        """Stop the pool, the session (when the scorer opened it) and the Ray actors."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._own_session and self._session is not None:
            self._session.close()
        if self._ray is not None:
            self._ray.close()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> BatchScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- helpers -------------------------------------------------------------------------------

    def session(self) -> Any:
        """The warm Session the scorer verifies through (opened on first use)."""
        with self._lock:
            if self._session is None:
                from kernelproof.session import Session

                self._session = Session()
            return self._session

    def _submit(self, job: _Job, deadline: float, seed: int) -> Future[Report]:
        if self._ray is not None:
            return self._ray.submit(
                job.task, job.source, self.profile, self.options, deadline, seed
            )
        return self._pool.submit(self._verify, job, deadline, seed)

    def _verify(self, job: _Job, deadline: float, seed: int) -> Report:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the batch's deadline passed before this pair started")
        session = self.session()
        options = {**self.options, "profile": self.profile, "deadline_s": remaining}
        if job.task.source is not None:
            return session.evaluate(job.task.source, job.source, **options)
        folder = Path(tempfile.mkdtemp(prefix="candidate-", dir=self._scratch))
        try:
            candidate = folder / "candidate.py"
            candidate.write_text(job.source, encoding="utf-8")
            assert job.task.path is not None
            return session.verify(job.task.path, candidate, base_seed=seed, **options)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _scored(
        self,
        report: Report | None,
        job: _Job,
        extraction: Extraction,
        elapsed: float,
        deadline_s: float,
        future: Future[Report],
    ) -> Scored:
        if report is None:
            failure = None if future.cancelled() or not future.done() else future.exception()
            reason = (
                f"not scored: the verifier failed ({type(failure).__name__}: {failure})"
                if failure is not None and not isinstance(failure, TimeoutError)
                else f"deadline: not scored within the batch's {deadline_s:g} s"
            )
            return Scored(
                self.shaping.reward(None, extracted=True),
                None,
                _short(reason),
                extraction,
                seconds=elapsed,
            )
        report_id = None
        if self.keep_report is not None:
            report_id = self.keep_report(job.task, report)
        decided = (
            report.pipeline.decided_by.value
            if report.pipeline and report.pipeline.decided_by
            else None
        )
        return Scored(
            self.shaping.reward(report, extracted=True),
            report.verdict.value,
            _short(report.summary) or None,
            extraction,
            decided,
            report,
            report_id,
            elapsed,
        )


def _short(text: str) -> str:
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."
