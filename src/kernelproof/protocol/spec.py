"""What a worker is told when it starts, and how it is started: by the harness's module name,
so that the controller's side never imports the code that runs beside the candidate."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["HARNESS_MODULE", "WorkerSpec", "start_worker"]

#: The module whose ``worker_main(conn, spec)`` runs inside every worker process.
HARNESS_MODULE = "kernelproof.harness.worker"


@dataclass
class WorkerSpec:
    """What a worker is told when it starts. Sent by the trusted controller."""

    role: str  # "reference" or "candidate"
    task_path: str
    task_source: str
    candidate_path: str | None
    device: str
    dtype: str | None
    threads: int | None
    workdir: str
    log_path: str
    probes: bool = True
    readable_paths: list[str] = field(default_factory=list)
    own_folder: list[str] = field(default_factory=list)
    """What the candidate may read (never write) of the folder that holds its source: the
    folder (with a trailing ``/``) or its entries one by one (``workers.pair.own_folder``)."""
    module_mode: str = "as-built"  # "as-built", "eval" or "train": see Settings.mode
    sandbox: dict[str, Any] | None = None
    """The candidate's :class:`~kernelproof.sandbox.SandboxPlan` (as a dict), or None
    for a worker that runs trusted code only."""

    environment: dict[str, str] = field(default_factory=dict)
    """Variables set before anything is imported. A candidate's is its whole environment
    (an allowlist with its own temp and build-cache folders); a reference worker's is added
    to the forkserver's."""


def start_worker(conn: Connection, spec: WorkerSpec) -> None:
    """The worker process's target: hands over to the harness, found by name in the child."""
    importlib.import_module(HARNESS_MODULE).worker_main(conn, spec)
