"""The FastAPI app: the JSON API under ``/api`` and the pages, over one :class:`Server`.

Every error is a JSON object ``{"error": MESSAGE, "status": CODE}`` whose message says what
was wrong and what to send instead; nothing leaks a traceback. The pages are Jinja2 templates
with no external assets, served under a Content-Security-Policy that forbids any.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import FastAPI, Path, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from kernelproof.errors import CandidateFormatError, KernelproofError, TaskError
from kernelproof.report import formatting as fmt
from kernelproof.serve.access import ApiError, authenticated, bounded_body, too_large
from kernelproof.serve.catalog import SuiteCatalog, UnknownTask
from kernelproof.serve.config import SERVE_RUN_SOLUTIONS, ServeConfig
from kernelproof.serve.limits import RateLimiter
from kernelproof.serve.openapi import errors, html, install_schema, json_body, json_object
from kernelproof.serve.queue import QueueFull, SubmissionQueue
from kernelproof.serve.rewards import OpenRLHFRequest, RewardRequest, install_rewards
from kernelproof.serve.scrub import without_source
from kernelproof.serve.tables import SubmissionStatus
from kernelproof.serve.tokens import TokenBook
from kernelproof.serve.views import (
    SubmissionView,
    TaskLeaderboard,
    TaskSummary,
    submission_view,
    task_leaderboard,
)
from kernelproof.store.results import ResultsStore

__all__ = ["ApiError", "Server", "create_app"]

#: The pages' Content-Security-Policy: inline styles and scripts of our own templates, images
#: as data: URLs, requests only back to this server. Nothing is ever fetched from elsewhere.
PAGE_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; font-src data:; connect-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)

#: Largest submission id: the ids are PostgreSQL ``integer``s (32 bits). A larger id is
#: refused as invalid, never looked up (the database would fail on it).
MAX_ID = (1 << 31) - 1

#: A submission id in a path.
SubmissionId = Annotated[int, Path(ge=1, le=MAX_ID, description="An id from POST /api/submissions")]

#: The operator's log: detail that clients must not see (file paths, exceptions).
log = logging.getLogger("kernelproof.serve")

#: Rows a history page shows.
HISTORY_LIMIT = 200

#: Rendered packets kept in memory (each a few hundred KiB with its plots).
PACKET_CACHE_SIZE = 64


class SubmissionRequest(BaseModel):
    """``POST /api/submissions``."""

    model_config = ConfigDict(extra="forbid")

    task: str
    """A task of the served suite, e.g. ``level1/10_Softmax`` (``GET /api/tasks``)."""

    source: str
    """The candidate's Python source, defining ``ModelNew`` (or the format's entry point)."""


@dataclass
class Server:
    """Everything the app's routes share: built once per server, safe across threads."""

    config: ServeConfig
    store: ResultsStore
    queue: SubmissionQueue
    catalog: SuiteCatalog
    run_id: int
    pool: Any = None
    """The :class:`~kernelproof.serve.supervisor.WorkerPool`, started with the app."""

    limiter: RateLimiter = field(init=False)
    _packets: OrderedDict[tuple[int, bool], str] = field(default_factory=OrderedDict)
    """Rendered packets by verification id: a stored report never changes, and rendering one
    (its plots) costs far more than serving it."""

    _packets_lock: threading.Lock = field(default_factory=threading.Lock)

    _tokens: TokenBook | None = None
    _tokens_stamp: tuple[int, int, int] = (-1, -1, -1)
    submit_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(
            self.config.limits.submissions_per_minute, self.config.limits.burst
        )

    def packet(
        self, verification_id: int, private_source: str | None = None, public_source: str = ""
    ) -> str:
        """The review packet of a stored verification, rendered once. With
        ``private_source``, the packet without anything derived from that source (its lines,
        names, traceback frames, repro scripts) but what ``public_source`` (the reference)
        shares with it: what a ``--private-code`` server shows others."""
        from kernelproof.report.html import render_html

        key = (verification_id, private_source is not None)
        with self._packets_lock:
            cached = self._packets.get(key)
        if cached is None:
            report = self.store.report(verification_id)
            if private_source is not None:
                report = without_source(report, private_source, public_source)
            cached = render_html(report)
            with self._packets_lock:
                self._packets[key] = cached
                while len(self._packets) > PACKET_CACHE_SIZE:
                    self._packets.popitem(last=False)
        return cached

    def reference_source(self, task_key: str) -> str:
        """The source of a task's reference: the names in it are public."""
        task = self.catalog.tasks.get(task_key)
        try:
            return task.reference.read_text(encoding="utf-8") if task is not None else ""
        except (OSError, UnicodeDecodeError):
            return ""  # a folder (GPU MODE) or unreadable: no name counts as public

    def tokens(self) -> TokenBook:
        """The tokens file, read again when it changed (a token made or revoked while serving
        counts at once). A missing or broken file is the operator's to fix: the log says
        what is wrong with it, clients get a plain 503 that shows nothing of the server."""
        try:
            status = self.config.tokens.stat()
            stamp = (status.st_mtime_ns, status.st_ino, status.st_size)
            if self._tokens is None or stamp != self._tokens_stamp:
                self._tokens, self._tokens_stamp = TokenBook.load(self.config.tokens), stamp
        except (OSError, KernelproofError) as exc:
            log.error(
                "kernelproof serve: the tokens file cannot be read, so no token is accepted: %s",
                exc,
            )
            raise ApiError(
                503,
                "the server cannot check tokens right now (its operator has "
                "been told); retry later",
                {"Retry-After": "30"},
            ) from None
        return self._tokens


def create_app(server: Server) -> FastAPI:
    """The app over ``server``; its worker pool starts and stops with the app."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        if server.pool is not None:
            server.pool.start()
        try:
            yield
        finally:
            if server.pool is not None:
                await run_in_threadpool(server.pool.stop)
            await run_in_threadpool(rewards.close)
            server.store.finish_run(server.run_id)

    app = FastAPI(
        title="kernelproof",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    pages = _templates()
    _install_error_handlers(app)
    rewards = install_rewards(app, server)  # POST /api/rewards (serve/rewards.py)
    install_schema(app, [SubmissionRequest, RewardRequest, OpenRLHFRequest])

    # -- the API -------------------------------------------------------------------------------

    @app.post(
        "/api/submissions",
        status_code=202,
        openapi_extra=json_body(SubmissionRequest),
        responses={
            200: {
                "model": SubmissionView,
                "description": "Done at once: an identical verification's result",
            },
            202: {"model": SubmissionView, "description": "Queued"},
            **errors(401, 404, 413, 422, 429, 500, 503),
        },
    )
    async def submit(request: Request) -> JSONResponse:
        name = authenticated(server.tokens, request, required=True)
        body = await bounded_body(request, server.config.limits.max_source_bytes)
        try:
            payload = SubmissionRequest.model_validate_json(body)
        except ValidationError as exc:
            raise ApiError(422, _validation_message(exc)) from None
        view = await run_in_threadpool(_submit, server, name, payload)
        return JSONResponse(
            view.model_dump(mode="json", exclude_none=True),
            status_code=200 if view.status is SubmissionStatus.DONE else 202,
        )

    @app.get(
        "/api/submissions/{submission_id}",
        responses={200: {"model": SubmissionView}, **errors(401, 404, 422, 503)},
    )
    def submission(submission_id: SubmissionId, request: Request) -> dict[str, Any]:
        name = authenticated(server.tokens, request, required=False)
        return _view(server, submission_id, name).model_dump(mode="json", exclude_none=True)

    @app.get(
        "/api/submissions/{submission_id}/report",
        responses={
            **json_object("The verification's report (kernelproof.report/1)"),
            **errors(401, 403, 404, 409, 422, 503),
        },
    )
    def report(submission_id: SubmissionId, request: Request) -> Response:
        name = authenticated(server.tokens, request, required=False)
        verification_id = _done_verification(server, submission_id, name, "report")
        return Response(
            server.store.report(verification_id).to_json(), media_type="application/json"
        )

    @app.get(
        "/api/submissions/{submission_id}/packet",
        response_class=HTMLResponse,
        responses={
            **html("The whole review packet, code section included"),
            **errors(401, 403, 404, 409, 422, 503),
        },
    )
    def owner_packet(submission_id: SubmissionId, request: Request) -> HTMLResponse:
        name = authenticated(server.tokens, request, required=True)
        verification_id = _done_verification(server, submission_id, name, "packet", owner_only=True)
        return _packet_response(server, verification_id, None)

    @app.get("/api/tasks", responses={200: {"model": list[TaskSummary]}})
    def tasks() -> list[dict[str, Any]]:
        return [t.model_dump(mode="json") for t in _task_summaries(server)]

    @app.get(
        "/api/leaderboard/{task:path}", responses={200: {"model": TaskLeaderboard}, **errors(404)}
    )
    def leaderboard(task: str) -> dict[str, Any]:
        return _leaderboard(server, task).model_dump(mode="json")

    @app.get("/api/queue")
    def queue_state() -> dict[str, Any]:
        return {
            "counts": server.queue.status_counts(),
            "active": [
                submission_view(s, None).model_dump(mode="json", exclude_none=True)
                for s in server.queue.active()
            ],
        }

    # -- the pages -----------------------------------------------------------------------------

    def page(template: str, **context: Any) -> HTMLResponse:
        html = pages.get_template(template).render(
            fmt=fmt, suite=server.catalog.suite.name, **context
        )
        return HTMLResponse(html, headers={"Content-Security-Policy": PAGE_CSP})

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return page(
            "index.html.j2",
            layout=server.catalog.layout,
            tasks=_task_summaries(server),
            counts=server.queue.status_counts(),
        )

    @app.get(
        "/tasks/{task:path}",
        response_class=HTMLResponse,
        responses={**html("The task's leaderboard and bench runs"), **errors(404)},
    )
    def task_page(task: str) -> HTMLResponse:
        board = _leaderboard(server, task)
        runs = {run.id: run for run in server.store.runs()}
        bench = [
            v
            for v in server.store.history(task_key=task, limit=HISTORY_LIMIT)
            if v.run_id in runs and runs[v.run_id].solutions != SERVE_RUN_SOLUTIONS
        ]
        return page("task.html.j2", board=board, bench=bench, runs=runs)

    @app.get(
        "/submissions/{submission_id}",
        response_class=HTMLResponse,
        responses={
            **html("The submission's state, or its review packet once done"),
            **errors(404, 422),
        },
    )
    def submission_page(submission_id: SubmissionId) -> HTMLResponse:
        view = _view(server, submission_id, None)
        if view.result is not None:
            source = None
            if server.config.private_code:
                submission = server.queue.get(submission_id, with_source=True)
                source = submission.source if submission is not None else ""
            return _packet_response(
                server, view.result.verification_id, source, server.reference_source(view.task)
            )
        return page("submission.html.j2", view=view)

    @app.get(
        "/history",
        response_class=HTMLResponse,
        responses={**html("Stored verifications, and two runs compared"), **errors(404, 422)},
    )
    def history(a: int | None = None, b: int | None = None) -> HTMLResponse:
        from kernelproof.suite.comparison import compare_runs

        runs = {run.id: run for run in server.store.runs()}
        comparison = None
        if a is not None and b is not None:
            for run_id in (a, b):
                if run_id not in runs:
                    raise ApiError(
                        404, f"no run {run_id} in the store; pick runs from the list on /history"
                    )
            comparison = compare_runs(server.store.records(a), server.store.records(b))
        return page(
            "history.html.j2",
            rows=server.store.history(limit=HISTORY_LIMIT),
            runs=runs,
            a=a,
            b=b,
            comparison=comparison,
        )

    @app.get("/queue", response_class=HTMLResponse)
    def queue_page() -> HTMLResponse:
        workers = server.pool.describe() if server.pool is not None else []
        return page(
            "queue.html.j2",
            active=server.queue.active(),
            counts=server.queue.status_counts(),
            workers=workers,
        )

    return app


# -- route helpers -----------------------------------------------------------------------------


def _validation_message(exc: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}" for err in exc.errors()
    )
    return (
        f'the body must be JSON {{"task": "level1/10_Softmax", "source": "..."}} '
        f"and nothing else: {problems}"
    )


def _submit(server: Server, name: str, payload: SubmissionRequest) -> SubmissionView:
    limits = server.config.limits
    size = len(payload.source.encode("utf-8"))
    if size > limits.max_source_bytes:
        raise too_large(size, limits.max_source_bytes, "the source")
    wait = server.limiter.take(name)
    if wait:
        raise ApiError(
            429,
            f"token {name!r} is over its rate limit of "
            f"{limits.submissions_per_minute:g} submissions per minute "
            f"(bursts of {limits.burst}); retry in {wait:g} s",
            {"Retry-After": str(max(1, round(wait)))},
        )
    try:
        identity = server.catalog.identity(payload.task, payload.source)
    except UnknownTask as exc:
        raise ApiError(404, str(exc)) from None
    except CandidateFormatError as exc:
        raise ApiError(
            422, f"the source cannot be a candidate for {payload.task}: {_without_paths(str(exc))}"
        ) from None
    except TaskError as exc:
        raise ApiError(
            500,
            f"the task {payload.task} is broken on this server (not your "
            f"fault; tell the operator): {exc}",
        ) from None
    # One submission at a time from this server: the reuse lookup and the insert then see
    # each other, so a burst of identical submissions is verified once.
    with server.submit_lock:
        try:
            row = server.queue.submit(
                name, payload.task, payload.source, identity, max_queued=limits.max_queued_per_token
            )
        except QueueFull as exc:
            raise ApiError(429, str(exc)) from None
    verification = (
        server.queue.verification(row.verification_id) if row.verification_id is not None else None
    )
    return submission_view(row, verification)  # the submitter has the source: not echoed


def _without_paths(message: str) -> str:
    """A format error without the server's scratch path (the user never saw that file)."""
    return re.sub(r"\S*/submission\.py:\s*", "", message)


def _view(server: Server, submission_id: int, name: str | None) -> SubmissionView:
    submission = server.queue.get(submission_id, with_source=name is not None)
    if submission is None:
        raise ApiError(404, f"no submission {submission_id}; ids come from POST /api/submissions")
    verification = (
        server.queue.verification(submission.verification_id)
        if submission.verification_id is not None
        else None
    )
    source = submission.source if name is not None and name == submission.token_name else None
    return submission_view(submission, verification, source)


def _done_verification(
    server: Server, submission_id: int, name: str | None, what: str, owner_only: bool = False
) -> int:
    view = _view(server, submission_id, name)
    if view.result is None:
        raise ApiError(
            409,
            f"submission {submission_id} is {view.status.value}: its {what} "
            "exists once it is done (poll GET /api/submissions/ID)",
        )
    private = owner_only or server.config.private_code
    if private and name != view.submitted_by:
        raise ApiError(
            403,
            f"the {what} of submission {submission_id} is private to the token "
            "that submitted it; send that token, or read the public packet at "
            f"/submissions/{submission_id}",
        )
    return view.result.verification_id


#: The packet's code section, as ``report/templates/_code.html.j2`` renders it.
_CODE_SECTION = re.compile(r'<section id="code">.*?</section>', re.DOTALL)


def _packet_response(
    server: Server, verification_id: int, private_source: str | None, public_source: str = ""
) -> HTMLResponse:
    """The packet page; with ``private_source`` (a ``--private-code`` server's public view),
    without the code section and without anything derived from that source."""
    html = server.packet(verification_id, private_source, public_source)
    if private_source is not None:
        html, hidden = _CODE_SECTION.subn(
            '<section id="code"><h2>Code facts</h2><p class="muted">Private: this server shows '
            "the code section only to the token that submitted it "
            "(GET /api/submissions/ID/packet with that token).</p></section>",
            html,
            count=1,
        )
        if hidden != 1:  # the packet's layout changed: refuse rather than leak
            raise ApiError(
                500,
                "the packet's code section could not be hidden; the server "
                "refuses to show it publicly (tell the operator)",
            )
    return HTMLResponse(html, headers={"Content-Security-Policy": PAGE_CSP})


def _task_summaries(server: Server) -> list[TaskSummary]:
    boards: dict[str, TaskLeaderboard] = {}
    results = server.queue.results()
    by_task: dict[str, list[Any]] = {}
    for submission, verification in results:
        by_task.setdefault(submission.task_key, []).append((submission, verification))
    for key, rows in by_task.items():
        boards[key] = task_leaderboard(key, rows)
    summaries = []
    for key, task in server.catalog.tasks.items():
        board = boards.get(key)
        leader = board.ranked[0] if board and board.ranked else None
        count = (
            (len(board.ranked) + len(board.suspect) + len(board.incorrect) + len(board.other))
            if board
            else 0
        )
        summaries.append(
            TaskSummary(
                task=key,
                level=task.level,
                problem=task.problem,
                results=count,
                verified=len(board.ranked) if board else 0,
                best_speedup_ci_low=(
                    leader.result.speedup_ci[0] if leader and leader.result.speedup_ci else None
                ),
            )
        )
    return summaries


def _leaderboard(server: Server, task: str) -> TaskLeaderboard:
    try:
        server.catalog.task(task)
    except UnknownTask as exc:
        raise ApiError(404, str(exc)) from None
    return task_leaderboard(task, server.queue.results(task))


def _templates() -> Environment:
    """Autoescaping always on: token names, task names and reasons are shown as text."""
    return Environment(
        loader=PackageLoader("kernelproof.serve", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _error(
                404,
                f"nothing at {request.url.path}: the pages are /, /tasks/TASK, "
                "/submissions/ID, /history and /queue; the API is under /api",
            )
        if exc.status_code == 405:
            allowed = _allowed_methods(request)
            return _error(
                405,
                f"{request.method} is not allowed on {request.url.path}; "
                f"use {', '.join(allowed) or 'another path'}",
                {"Allow": ", ".join(allowed)} if allowed else None,
            )
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        return _error(422, f"invalid request: {problems}")

    @app.exception_handler(KernelproofError)
    async def usage(_request: Request, exc: KernelproofError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(Exception)
    async def unexpected(_request: Request, exc: Exception) -> JSONResponse:
        log.error("kernelproof serve: a request failed", exc_info=exc)
        return _error(
            500,
            f"the server failed ({type(exc).__name__}); nothing stored was "
            "lost. Retry, and tell the operator if it persists",
        )


def _allowed_methods(request: Request) -> list[str]:
    """The methods the routes matching the request's path accept (for a 405's ``Allow``)."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)
