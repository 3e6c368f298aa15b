"""Reward functions in veRL's custom-reward signatures.

veRL loads ``custom_reward_function.path`` as a file and calls its ``name`` function:

* the default (naive) reward manager, once per response::

      compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...)

* the batch reward manager (``reward_model.reward_manager=batch``), once per batch, which
  scores concurrently::

      compute_score_batch(data_sources=[...], solution_strs=[...], ground_truths=[...],
                          extra_infos=[...])

``ground_truth`` is the task: the reference's source text, a path, or a key of the suite in
``KERNELPROOF_SUITE``. Each returns ``{"score": reward, ...}`` dicts with the same keys for
every response (veRL collects them into ``reward_extra_info``). Point
``custom_reward_function.path`` at this file (``python -c "import kernelproof.rl.verl as v;
print(v.__file__)"``): it imports kernelproof by absolute name, so loading it by path works.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from kernelproof.rl.scorer import BatchScorer, Scored

__all__ = ["compute_score", "compute_score_batch", "scorer"]

#: Environment variable naming a suite folder whose task keys ``ground_truth`` may hold.
SUITE_ENV = "KERNELPROOF_SUITE"

_SCORER: BatchScorer | None = None
_LOCK = threading.Lock()


def scorer() -> BatchScorer:
    """The process's scorer for veRL, opened on first use (kept in ``kernelproof.rl.verl``
    even when veRL loads this file as another module)."""
    import kernelproof.rl.verl as shared

    with _LOCK:
        if shared._SCORER is None:
            from pathlib import Path

            from kernelproof.rl.tasks import TaskBook

            suite = os.environ.get(SUITE_ENV)
            shared._SCORER = BatchScorer(tasks=TaskBook(Path(suite) if suite else None))
        return shared._SCORER


def _result(scored: Scored) -> dict[str, Any]:
    # Same keys, same types for every response: veRL turns each key into an array.
    return {
        "score": scored.reward,
        "verified": float(scored.verdict == "verified"),
        "verdict": scored.verdict or "none",
        "decided_by": scored.decided_by or "none",
        "reason": scored.reason or "",
    }


def compute_score(
    data_source: Any = None,
    solution_str: str = "",
    ground_truth: str = "",
    extra_info: dict[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """One response (veRL's naive reward manager). Scoring one at a time cannot overlap
    verifications: use :func:`compute_score_batch` with the batch manager for throughput."""
    return _result(scorer().score([(ground_truth, solution_str)])[0])


def compute_score_batch(
    data_sources: Sequence[Any] = (),
    solution_strs: Sequence[str] = (),
    ground_truths: Sequence[str] = (),
    extra_infos: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """A batch of responses (veRL's batch reward manager), scored concurrently, in order."""
    if len(solution_strs) != len(ground_truths):
        raise ValueError(f"{len(solution_strs)} responses but {len(ground_truths)} ground truths")
    return [_result(s) for s in scorer().score(list(zip(ground_truths, solution_strs)))]
