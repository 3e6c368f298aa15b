"""A reward function in TRL's ``GRPOTrainer`` signature.

TRL calls each reward function as ``f(prompts=..., completions=..., completion_ids=...,
**columns)``, where ``columns`` holds every dataset column but the prompt (one value per
completion) plus ``trainer_state``, ``log_extra`` and ``log_metric``; completions are strings
or conversational message lists. It expects one float per completion, in order. The task's
reference comes from a dataset column (``reference`` by default): its source text, a path,
or a key of ``suite``.

>>> from kernelproof.rl.trl import kernel_reward
>>> trainer = GRPOTrainer(model=..., reward_funcs=[kernel_reward()], train_dataset=dataset)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernelproof.rl.scorer import BatchScorer

__all__ = ["KernelReward", "kernel_reward"]


class KernelReward:
    """The reward function; build it with :func:`kernel_reward`. Its scorer (a warm
    Session) opens on the first call, so the object pickles and crosses processes."""

    def __init__(
        self, reference_column: str = "reference", name: str = "kernelproof", **scorer_options: Any
    ) -> None:
        self.reference_column = reference_column
        self.__name__ = name  # TRL names the reward's log columns after it
        self.scorer_options = scorer_options
        self._scorer: BatchScorer | None = None
        self.last: list[Any] = []
        """The last batch's :class:`~kernelproof.rl.scorer.Scored` results (reports included)."""

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        if completions is None:
            raise TypeError(
                "kernelproof's reward takes completions=[...] as GRPOTrainer passes them"
            )
        references = kwargs.get(self.reference_column)
        if references is None:
            columns = sorted(k for k in kwargs if k not in _TRAINER_KEYWORDS)
            raise KeyError(
                f"the dataset has no {self.reference_column!r} column for the task's "
                f"reference (its columns here: {columns}); add one, or pass "
                f"kernel_reward(reference_column=...)"
            )
        if len(references) != len(completions):
            raise ValueError(
                f"{len(completions)} completions but {len(references)} values of "
                f"{self.reference_column!r}"
            )
        scored = self.scorer().score(list(zip(references, completions)))
        self.last = scored
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if callable(log_extra):
            log_extra("kernelproof_verdict", [s.verdict or "none" for s in scored])
            log_extra("kernelproof_reason", [s.reason or "" for s in scored])
        if callable(log_metric) and scored:
            log_metric(
                "kernelproof/verified", sum(s.verdict == "verified" for s in scored) / len(scored)
            )
            log_metric("kernelproof/extracted", sum(s.extraction.ok for s in scored) / len(scored))
        return [s.reward for s in scored]

    def scorer(self) -> BatchScorer:
        if self._scorer is None:
            self._scorer = BatchScorer(**self.scorer_options)
        return self._scorer

    def close(self) -> None:
        if self._scorer is not None:
            self._scorer.close()
            self._scorer = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_scorer"], state["last"] = None, []
        return state


#: Keyword arguments GRPOTrainer adds besides the dataset's columns.
_TRAINER_KEYWORDS = frozenset(
    {"completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)


def kernel_reward(reference_column: str = "reference", **scorer_options: Any) -> KernelReward:
    """A ``GRPOTrainer`` reward function. ``scorer_options`` go to
    :class:`~kernelproof.rl.scorer.BatchScorer` (``profile``, ``shaping``, ``deadline_s``,
    ``jobs``, ``tasks``, ``ray``, verification settings)."""
    return KernelReward(reference_column, **scorer_options)
