"""The reward endpoint: a batch of (task, completion) in, rewards and report ids out.

For trainers that score rollouts through a remote reward model. Two request shapes:

* ``POST /api/rewards``: ``{"items": [{"task": "level1/10_Softmax", "completion": ...}],
  "deadline_s": 120}`` (a completion is text or a conversational message list). The answer:
  ``{"rewards": [...], "report_ids": [...], "results": [{verdict, reason, decided_by, ...}]}``.
* ``POST /api/rewards/openrlhf``: OpenRLHF's remote reward model
  (``openrlhf/utils/remote_rm_utils.py`` posts ``{"query": [...], "prompts": [...],
  "labels": [...]}`` and reads ``rewards``): each query is its prompt followed by the
  response, the label is the task's key. The answer adds ``scores`` (1 for verified, else 0,
  for dynamic filtering) and ``extra_logs``.

Tasks are keys of the served suite, never code from the request (the reference runs outside
the candidate's sandbox). Each request needs a token (``Authorization: Bearer``, or
``?token=`` for clients that cannot set headers, such as OpenRLHF's); a token has a batch
rate limit, a cap on batches in flight and a size limit per completion and per batch, each
refusal saying which and the fix. Scoring runs in this process through one warm Session
(fail-fast, profile ``rl``), within the batch's deadline; every report is stored under the
server's run (not on any leaderboard) and served at ``GET /api/rewards/reports/ID``.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelproof.rl.completion import MAX_COMPLETION_CHARS, Extraction
from kernelproof.rl.scorer import BatchScorer, Scored
from kernelproof.rl.tasks import TaskBook, TaskRef
from kernelproof.schema import Report
from kernelproof.serve.access import ApiError, authenticated, bounded_body
from kernelproof.serve.limits import RateLimiter

__all__ = ["RewardLimits", "RewardService", "install_rewards"]

#: Reward reports whose owner the server remembers (the most recent): their ids are served to
#: that token only; older ones, and every one after a restart, are no longer served here.
KEPT_OWNERS = 200_000


class RewardLimits(BaseModel):
    """What one token may ask of the reward endpoint."""

    max_batch: int = Field(default=512, gt=0)
    """Completions per request: a GRPO step's rollouts for one micro-batch, with room."""

    max_completion_chars: int = Field(default=MAX_COMPLETION_CHARS, gt=0)
    """Characters per completion (a query with its prompt, for OpenRLHF)."""

    max_body_bytes: int = Field(default=64 << 20, gt=0)
    """Bytes per request body, refused unread beyond (JSON escaping included)."""

    batches_per_minute: float = Field(default=60.0, gt=0)
    """Sustained batches per token per minute."""

    burst: int = Field(default=10, gt=0)
    """Batches a token may send at once before the rate applies."""

    max_in_flight_per_token: int = Field(default=2, gt=0)
    """Batches of one token being scored at once, so no token starves the others."""

    default_deadline_s: float = Field(default=300.0, gt=0)
    max_deadline_s: float = Field(default=900.0, gt=0)
    """The longest deadline a request may ask for: a batch holds the scorer until then."""


class RewardRequest(BaseModel):
    """``POST /api/rewards``."""

    model_config = ConfigDict(extra="forbid")

    class Item(BaseModel):
        model_config = ConfigDict(extra="forbid")
        task: str
        """A task of the served suite, e.g. ``level1/10_Softmax`` (``GET /api/tasks``)."""

        completion: str | list[dict[str, Any]]
        """The model's completion: text, or conversational messages."""

    items: list[Item]
    deadline_s: float | None = Field(default=None, gt=0)


class OpenRLHFRequest(BaseModel):
    """``POST /api/rewards/openrlhf``: OpenRLHF's remote reward model request."""

    query: list[str]
    """Each rollout's prompt followed by its response."""

    prompts: list[str]
    labels: list[str]
    """The dataset's label column (``--label_key``): the task's key in the served suite."""


@dataclass
class RewardService:
    """The endpoint's state: its scorer (opened on first use), limits and bookkeeping."""

    server: Any
    limits: RewardLimits = field(default_factory=RewardLimits)
    scorer: BatchScorer | None = None
    _limiter: RateLimiter = field(init=False)
    _in_flight: dict[str, int] = field(default_factory=dict)
    _owners: OrderedDict[str, str] = field(default_factory=OrderedDict)
    """Report id -> the token that scored it: a reward's report is served to that token only
    (the store also holds submissions' reports, private under ``--private-code``)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._limiter = RateLimiter(self.limits.batches_per_minute, self.limits.burst)

    def tasks(self) -> TaskBook:
        """The served suite's keys only: no source text, no paths."""
        return TaskBook(self.server.catalog.suite, allow_source=False, allow_paths=False)

    def batch_scorer(self) -> BatchScorer:
        with self._lock:
            if self.scorer is None:
                self.scorer = BatchScorer(
                    tasks=self.tasks(),
                    keep_report=self.keep,
                    deadline_s=self.limits.default_deadline_s,
                )
            return self.scorer

    def keep(self, task: TaskRef, report: Report) -> str:
        """Store a reward's report under the server's run; its id is the report id, readable
        by the token whose batch it was (:meth:`owner`)."""
        catalog_task = self.server.catalog.tasks.get(task.key)
        level = catalog_task.level if catalog_task is not None else None
        problem = catalog_task.problem if catalog_task is not None else task.key
        report_id = str(
            self.server.store.add(self.server.run_id, task.key, level, problem, 0, report)
        )
        with self._lock:
            self._owners[report_id] = ""  # its batch's token is named when the batch answers
            while len(self._owners) > KEPT_OWNERS:
                self._owners.popitem(last=False)
        return report_id

    def owner(self, report_id: str) -> str | None:
        """The token whose batch made ``report_id``; None for any other verification."""
        with self._lock:
            return self._owners.get(report_id)

    def score(
        self, name: str, pairs: list[tuple[str, Any]], deadline_s: float | None
    ) -> list[Scored]:
        """Score one batch for token ``name``, within its limits."""
        limits = self.limits
        if len(pairs) > limits.max_batch:
            raise ApiError(
                413,
                f"the batch has {len(pairs)} completions; at most "
                f"{limits.max_batch} per request: split it",
            )
        for index, (_, completion) in enumerate(pairs):
            if isinstance(completion, Extraction):
                continue
            size = len(completion) if isinstance(completion, str) else len(json.dumps(completion))
            if size > limits.max_completion_chars:
                raise ApiError(
                    413,
                    f"completion {index} is {size} characters; at most "
                    f"{limits.max_completion_chars}",
                )
        deadline = deadline_s or limits.default_deadline_s
        if deadline > limits.max_deadline_s:
            raise ApiError(422, f"deadline_s is {deadline:g}; at most {limits.max_deadline_s:g}")
        wait = self._limiter.take(name)
        if wait:
            raise ApiError(
                429,
                f"token {name!r} is over its rate limit of "
                f"{limits.batches_per_minute:g} reward batches per minute "
                f"(bursts of {limits.burst}); retry in {wait:g} s",
                {"Retry-After": str(max(1, round(wait)))},
            )
        with self._lock:
            if self._in_flight.get(name, 0) >= limits.max_in_flight_per_token:
                raise ApiError(
                    429,
                    f"token {name!r} already has "
                    f"{limits.max_in_flight_per_token} reward batches being "
                    "scored; wait for one to answer",
                )
            self._in_flight[name] = self._in_flight.get(name, 0) + 1
        try:
            scored = self.batch_scorer().score(pairs, deadline_s=deadline)
        finally:
            with self._lock:
                self._in_flight[name] -= 1
        with self._lock:  # the reports were stored by the scorer's threads: name their owner
            for result in scored:
                if result.report_id is not None and self._owners.get(result.report_id) == "":
                    self._owners[result.report_id] = name
        return scored

    def close(self) -> None:
        if self.scorer is not None:
            self.scorer.close()


def response_of(pair: tuple[str, str]) -> tuple[str | None, str]:
    """The response in an OpenRLHF query: what follows its prompt. None (and why) when the
    query does not hold its prompt: then the response cannot be told from the prompt, whose
    own code (the reference, an example ``ModelNew``) must never be taken as the candidate."""
    query, prompt = pair
    if query.startswith(prompt):
        return query[len(prompt) :], ""
    stripped = prompt.strip()
    if stripped and stripped in query:
        return query[query.index(stripped) + len(stripped) :], ""
    return None, (
        "the query does not contain its prompt, so its response cannot be told "
        "from the prompt; send query = prompt + response"
    )


def install_rewards(app: FastAPI, server: Any) -> RewardService:
    """Add the reward routes to ``app`` (a server's); returns their service (also kept as
    ``app.state.rewards``), which the app closes when it stops."""
    from kernelproof.serve.openapi import errors, json_body, json_object

    service = RewardService(server)
    app.state.rewards = service

    def token_name(request: Request) -> str:
        token = request.query_params.get("token")
        if token is not None and "authorization" not in request.headers:
            name = server.tokens().name_of(token)
            if name is None:
                raise ApiError(
                    401,
                    "this token is not known to the server: check it was "
                    "copied whole (it starts with 'kp_')",
                )
            return name
        return authenticated(server.tokens, request, required=True)

    async def body_of(request: Request, model: type[BaseModel]) -> Any:
        cap = service.limits.max_body_bytes
        body = await bounded_body(request, max(1, cap // 6 - 4096))
        try:
            return model.model_validate_json(body)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                for e in exc.errors()[:5]
            )
            raise ApiError(422, f"the body is not a {model.__name__}: {problems}") from None

    @app.post(
        "/api/rewards",
        openapi_extra=json_body(RewardRequest),
        responses={
            **json_object("One reward per completion, in order"),
            **errors(401, 413, 422, 429, 503),
        },
    )
    async def rewards(request: Request) -> dict[str, Any]:
        name = token_name(request)
        payload = await body_of(request, RewardRequest)
        pairs = [(item.task, item.completion) for item in payload.items]
        scored = await run_in_threadpool(service.score, name, pairs, payload.deadline_s)
        return {
            "rewards": [s.reward for s in scored],
            "report_ids": [s.report_id for s in scored],
            "results": [s.as_dict() for s in scored],
        }

    @app.post(
        "/api/rewards/openrlhf",
        openapi_extra=json_body(OpenRLHFRequest),
        responses={**json_object("OpenRLHF's reward answer"), **errors(401, 413, 422, 429, 503)},
    )
    async def openrlhf(request: Request) -> dict[str, Any]:
        name = token_name(request)
        payload = await body_of(request, OpenRLHFRequest)
        if not len(payload.query) == len(payload.prompts) == len(payload.labels):
            raise ApiError(
                422,
                f"query, prompts and labels must have one entry per rollout: "
                f"got {len(payload.query)}, {len(payload.prompts)} and "
                f"{len(payload.labels)}",
            )
        responses = [response_of(pair) for pair in zip(payload.query, payload.prompts)]
        pairs = [
            (label, response if response is not None else Extraction(None, problem))
            for label, (response, problem) in zip(payload.labels, responses)
        ]
        scored = await run_in_threadpool(service.score, name, pairs, None)
        return {
            "rewards": [s.reward for s in scored],
            "scores": [1.0 if s.verdict == "verified" else 0.0 for s in scored],
            "extra_logs": {
                "verified": [float(s.verdict == "verified") for s in scored],
                "extracted": [float(s.extraction.ok) for s in scored],
            },
            "report_ids": [s.report_id for s in scored],
            "verdicts": [s.verdict for s in scored],
            "reasons": [s.reason for s in scored],
        }

    @app.get(
        "/api/rewards/reports/{report_id}",
        responses={
            **json_object("The reward's report (kernelproof.report/1)"),
            **errors(401, 404, 422, 503),
        },
    )
    def reward_report(report_id: int, request: Request) -> Response:
        name = token_name(request)
        if service.owner(str(report_id)) != name:
            raise ApiError(
                404,
                f"no reward report {report_id} for token {name!r}: a reward's "
                "report is served to the token whose batch made it, while "
                "this server runs (submissions' reports are under "
                "/api/submissions/ID/report)",
            )
        return Response(server.store.report(report_id).to_json(), media_type="application/json")

    return service
