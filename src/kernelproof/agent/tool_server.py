"""``kernelproof mcp``: a Model Context Protocol server for coding agents, over stdio.

Tools (each answers short text a model can act on, see :mod:`kernelproof.report.agent_text`):

* ``list_tasks()``: the tasks this server verifies against, with their shapes;
* ``verify(task, candidate)``: correctness and integrity (no timing), the smallest failing
  input and the inferred assumption when wrong; ``candidate`` is the kernel's source or a
  reply with one fenced block defining it;
* ``bench(task, candidate)``: the same with timing: the speedup and its confidence interval;
* ``explain(report_id)``: every finding, assumption, shrunk repro and failing cell of an
  earlier answer's report (or of a report given as JSON).

The tasks are the ones the user named when starting the server (a suite folder, task files):
an agent names them by key and never hands over reference code, which runs outside the
candidate's sandbox. Built on the official ``mcp`` SDK (``MCPServer`` in mcp 2, ``FastMCP`` in
mcp 1); every verification runs through one warm Session.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from kernelproof.report.agent_text import brief, explain
from kernelproof.rl.completion import extract_candidate
from kernelproof.rl.tasks import TaskBook, TaskRef, UnknownTask
from kernelproof.schema import Report

__all__ = ["AgentTools", "build_server", "serve_stdio"]

#: Reports kept for ``explain`` (the most recent); each is tens of KiB.
KEPT_REPORTS = 64

#: The server's name as agents see it.
SERVER_NAME = "kernelproof"

INSTRUCTIONS = (
    "Verify AI-written kernels against a trusted PyTorch reference. Call "
    "list_tasks, write a ModelNew for one of them, then verify(task, candidate) "
    "until it is verified, and bench it for its speedup. A verdict other than "
    "verified earns nothing; follow the 'next:' line of each answer."
)


class AgentTools:
    """The tools' logic, apart from the protocol (tested directly and through the SDK)."""

    def __init__(
        self,
        tasks: TaskBook,
        *,
        profile: str = "default",
        budget_s: float = 10.0,
        session: Any = None,
    ) -> None:
        self.tasks = tasks
        self.profile = profile
        self.budget_s = budget_s
        self._session = session
        self._reports: OrderedDict[str, tuple[Report, dict[str, str]]] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def session(self) -> Any:
        with self._lock:
            if self._session is None:
                from kernelproof.session import Session

                self._session = Session()
            return self._session

    def list_tasks(self) -> str:
        from kernelproof.tasks.source import read_task

        lines = []
        for key in self.tasks.keys:
            ref = self.tasks.resolve(key)
            if ref.source is not None and ref.path is not None:
                task = read_task(ref.path)
                knobs = ", ".join(f"{k}={v}" for k, v in task.default_knobs.items())
                doc = (
                    (task.text.split('"""')[1].strip().splitlines() or [""])[0]
                    if task.text.lstrip().startswith('"""')
                    else ""
                )
                lines.append(f"- {key}: ModelNew; {knobs}" + (f"; {doc}" if doc else ""))
            else:
                lines.append(f"- {key}: {ref.entry_point}")
        if not lines:
            return "no tasks: start the server with a suite folder or task files"
        return "tasks (verify(task=KEY, candidate=SOURCE)):\n" + "\n".join(lines)

    def verify(self, task: str, candidate: str, timing: bool = False) -> str:
        try:
            ref = self.tasks.resolve(task)
        except UnknownTask as exc:
            return f"error: {exc}. Call list_tasks for the task keys."
        source, problem = self._candidate(ref, candidate)
        if source is None:
            return (
                f"verdict: none (no candidate)\n- {problem}\nnext: send the kernel's "
                f"Python source defining `{ref.entry_point}`, or one ```python block"
            )
        options: dict[str, Any] = {"profile": self.profile, "timing": timing}
        if timing:
            options.update(budget_s=self.budget_s)
        report = self._run(ref, source, options)
        names = _names(report, ref)
        return _renamed(brief(report, self._keep(report, names)), names)

    def bench(self, task: str, candidate: str) -> str:
        return self.verify(task, candidate, timing=True)

    def explain(self, report_id: str) -> str:
        kept = self._reports.get(str(report_id).strip())
        if kept is None and str(report_id).lstrip().startswith("{"):
            try:
                kept = (Report.model_validate_json(report_id), {})
            except ValueError as exc:
                return f"error: that is not a kernelproof report ({str(exc)[:200]})"
        if kept is None:
            ids = ", ".join(self._reports) or "none yet"
            return (
                f"error: no report {report_id!r} here (kept: {ids}); the id is in the "
                "first line of a verify or bench answer"
            )
        report, names = kept
        return _renamed(explain(report), names)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()

    # -- helpers -------------------------------------------------------------------------------

    @staticmethod
    def _candidate(ref: TaskRef, candidate: str) -> tuple[str | None, str | None]:
        """The source itself when it is a Python module defining the entry point; otherwise
        the one fenced block of a reply that does."""
        extraction = extract_candidate(candidate, entry_point=ref.entry_point)
        return extraction.source, extraction.reason

    def _run(self, ref: TaskRef, source: str, options: dict[str, Any]) -> Report:
        session = self.session()
        if ref.source is not None:
            return session.evaluate(ref.source, source, **options)
        import tempfile

        with tempfile.TemporaryDirectory(prefix="kernelproof-agent-") as folder:
            file = Path(folder) / "candidate.py"
            file.write_text(source, encoding="utf-8")
            assert ref.path is not None
            return session.verify(ref.path, file, **options)

    def _keep(self, report: Report, names: dict[str, str]) -> str:
        with self._lock:
            report_id = f"r{next(self._ids)}"
            self._reports[report_id] = (report, names)
            while len(self._reports) > KEPT_REPORTS:
                self._reports.popitem(last=False)
            return report_id


def _names(report: Report, ref: TaskRef) -> dict[str, str]:
    """The verification's scratch paths (gone once it ends) and what the agent knows them as:
    its own candidate, and the task's file."""
    names = {}
    if report.candidate is not None:
        names[report.candidate.path] = "candidate.py"
    if report.reference is not None:
        names[report.reference.path] = str(ref.path) if ref.path is not None else ref.key
    return names


def _renamed(text: str, names: dict[str, str]) -> str:
    for path, name in names.items():
        text = text.replace(path, name)
    return text


#: Where the MCP SDK keeps its server class: mcp 2's MCPServer, else mcp 1's FastMCP. Looked up
#: by name, since each exists in one major version only (a static import of either is an error
#: to the type checker under the other).
_SERVER_CLASSES = (("mcp.server.mcpserver", "MCPServer"), ("mcp.server.fastmcp", "FastMCP"))


def _server_class() -> Any:
    for module, name in _SERVER_CLASSES:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(
        "kernelproof mcp needs the official MCP SDK: pip install "
        "'kernelproof[agents]' (or pip install mcp)"
    )


def build_server(tools: AgentTools) -> Any:
    """The MCP server with the four tools registered on ``tools``."""
    server = _server_class()(SERVER_NAME, instructions=INSTRUCTIONS)

    @server.tool()
    def list_tasks() -> str:
        """The tasks kernels can be verified against: their keys and default shapes."""
        return tools.list_tasks()

    @server.tool()
    def verify(task: str, candidate: str) -> str:
        """Verify a kernel against a task's reference: correctness on many inputs (shapes,
        values, layouts, special values) and integrity (no passthrough, no tampering). Returns
        the verdict, the smallest failing input and what to fix. `candidate`: the Python
        source defining ModelNew (or a reply holding it in one ```python block)."""
        return tools.verify(task, candidate)

    @server.tool()
    def bench(task: str, candidate: str) -> str:
        """verify, then time the kernel against the reference: speedup with its 95%
        confidence interval (tens of seconds)."""
        return tools.bench(task, candidate)

    @server.tool()
    def explain(report_id: str) -> str:
        """Every finding, inferred assumption, shrunk repro and failing cell of a report:
        its id from a verify or bench answer (or the report's JSON)."""
        return tools.explain(report_id)

    return server


def task_book(paths: list[Path]) -> TaskBook:
    """The tasks named on the command line: a suite folder adds each task by its key, a task
    file or GPU MODE folder adds itself by its name (file stem or folder name)."""
    from kernelproof.errors import UsageError
    from kernelproof.suite.layout import read_suite
    from kernelproof.tasks.gpumode import GpuModeFormat

    named: dict[str, Path] = {}
    for path in paths:
        path = path.expanduser().resolve()
        if not path.exists():
            raise UsageError(f"{path}: no such task file or suite folder")
        if path.is_file() or GpuModeFormat().accepts(path):
            named[path.stem if path.is_file() else path.name] = path
        else:
            _layout, found = read_suite(path, path)
            named.update({task.key: task.reference for task in found})
    return TaskBook(named=named, allow_source=False, allow_paths=False)


def serve_stdio(tasks: TaskBook, *, profile: str = "default", budget_s: float = 10.0) -> None:
    """Serve the tools over stdio until the client closes the connection. Nothing else may
    write to stdout: it is the protocol's channel (worker processes write to their logs)."""
    tools = AgentTools(tasks, profile=profile, budget_s=budget_s)
    try:
        build_server(tools).run("stdio")
    finally:
        tools.close()
        sys.stdout.flush()
