"""The reference and candidate workers of one verification, and their life cycle: the
controller talks to workers through a :class:`WorkerPair`."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelproof.config import Settings, cache_dir
from kernelproof.protocol.requests import (
    BuildRequest,
    PlanRequest,
    PrepareReply,
    PrepareRequest,
    ReplyT,
    Request,
)
from kernelproof.protocol.spec import WorkerSpec
from kernelproof.sandbox import SandboxPlan, grantable, holds_protected, readable_defaults
from kernelproof.tasks.source import TaskSource
from kernelproof.workers.candidate_environment import (
    BUILD_CACHE_VARIABLES,
    WORKER_DEFAULTS,
    candidate_environment,
)
from kernelproof.workers.freezer import FreezeLedger
from kernelproof.workers.process import (
    DeathCause,
    Response,
    Submitted,
    WorkerDeath,
    WorkerProcess,
)
from kernelproof.workers.reference_memo import ReferenceReplay, TaskMemo, WarmReference

#: Seconds a meta-device size estimate (a ``plan`` request) may take (see ``_timeout``).
PLAN_TIMEOUT_S = 10.0

#: Size estimates of one verification that may run out of time before no more are asked: a
#: task that builds Python objects per unit of a knob is slow to size at every large size.
MAX_PLAN_TIMEOUTS = 2

#: Environment every worker starts with (kept under this name for its importers).
WORKER_ENVIRONMENT = WORKER_DEFAULTS


#: Intra-op threads per CPU worker unless ``--threads`` says otherwise. One: OpenMP barriers
#: on a shared machine turn a 0.4 ms softmax into 16 ms at two threads (measured on the 2-vCPU
#: CI machine under load), and single-threaded kernels deserve a single-threaded baseline.
DEFAULT_CPU_THREADS = 1

#: Requests that call the candidate's model (its first may compile lazily).
CALL_OPS = frozenset({"run", "time", "work", "settle"})

#: The shortest timeout a candidate request gets at its caller's deadline: long enough to
#: send the request and see it refused, never long enough to run past the deadline by much.
MIN_DEADLINE_TIMEOUT_S = 0.05


def worker_threads(settings: Settings) -> int | None:
    """The thread count both workers are timed at: explicit, or the CPU default; CUDA keeps
    torch's own. Correctness runs at the machine's own count (``--threads`` caps it too)."""
    if settings.threads is not None:
        return settings.threads
    return DEFAULT_CPU_THREADS if settings.device == "cpu" else None


def prepare_request(
    knobs: dict[str, int], init_seed: int, state_names: list[str] | None = None
) -> PrepareRequest:
    """The request that builds a model at ``knobs`` (the candidate's also carries the names of
    the reference weights sent with it)."""
    return PrepareRequest(knobs=knobs, init_seed=init_seed, state_names=state_names)


def candidate_build_cache(candidate: Path | None) -> Path:
    """The build-cache folder of one candidate source, created by the controller.

    Keyed by the hash of the candidate's text, so that a candidate can only ever write where
    artifacts built from its own source live: it cannot plant a compiled module that another
    candidate, the reference's ``torch.compile`` baseline or a later run would load. The same
    source verified again reuses its builds (a C++ extension is not rebuilt)."""
    text = candidate.read_bytes() if candidate is not None and candidate.is_file() else b""
    folder = cache_dir() / "builds" / hashlib.sha256(text).hexdigest()[:24]
    for name in BUILD_CACHE_VARIABLES.values():
        (folder / name).mkdir(parents=True, exist_ok=True)
    return folder


#: The first bytes of an SQLite database: a results store (other candidates' sources, the
#: reference's cached answers) that a candidate must not read even beside its own source.
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class OwnFolder:
    """What a candidate may see of the folder that holds its source."""

    readable: list[str]
    """Paths it may read: the whole folder, or its entries one by one."""

    listable: list[str]
    """Folders it may list without reading every file in them."""


def own_folder(candidate: Path) -> OwnFolder:
    """What the candidate may read of its own folder, read-only (it writes only to its
    scratch): the whole folder (sibling sources, data files), unless the folder holds the
    controller's working folder or cache (``cd my_kernel && kernelproof verify reference.py
    candidate.py``, the most natural use). Then it may list the folder (libraries scan their
    source's folder: numba's cache index, ``importlib.metadata`` over ``sys.path``) and read
    each file directly in it except results stores, and each subfolder that holds nothing
    protected."""
    folder = candidate.parent
    if not holds_protected(str(folder)):
        return OwnFolder(readable=[str(folder)], listable=[])
    entries: list[str] = []
    for entry in sorted(folder.iterdir()):
        if entry.is_file() and not _is_store(entry):
            entries.append(str(entry))
        elif entry.is_dir() and not holds_protected(str(entry)):
            entries.append(str(entry) + "/")
    return OwnFolder(readable=entries, listable=[str(folder)])


def _is_store(path: Path) -> bool:
    """Whether ``path`` is an SQLite database (or its journal), such as a results store."""
    if path.name.endswith(("-wal", "-shm", "-journal")):
        return True
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return True


@dataclass(frozen=True)
class Handover:
    """Both workers prepared at one shape (:meth:`WorkerPair.prepare`)."""

    reference: Response[PrepareReply]
    candidate: Response[PrepareReply] | None
    """None when the reference could not be built: there was nothing to hand over."""

    @property
    def ok(self) -> bool:
        return self.reference.ok and self.candidate is not None and self.candidate.ok


@dataclass
class WorkerPair:
    """Starts, restarts and stops the two workers. The controller talks to them through this."""

    task: TaskSource
    candidate_path: Path | None
    settings: Settings
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kernelproof-")))
    reference: WorkerProcess | None = None
    candidate: WorkerProcess | None = None
    baseline: WorkerProcess | None = None
    """A second reference worker, for the ``torch.compile`` baseline only: compiling in the
    eager reference's process slowed that process's later eager calls (a 3 us Sum by 7-13%
    on identical code), which biased every speedup measured against it."""

    readable_paths: list[str] = field(default_factory=list)
    """Files the candidate worker may read besides its own (sources of a wrapped task)."""

    candidate_starts: int = 0
    build_s: float | None = None
    memo: TaskMemo | None = None
    """A session's memo of this task: the reference's answers are replayed from it, and a
    reference worker is borrowed from it and given back (see workers/reference_memo.py)."""

    contained: bool = True
    """Every candidate worker started so far entered the sandbox and /proc showed its walls:
    none could have reached the reference worker."""

    deadline: float | None = None
    """A ``time.monotonic()`` instant no candidate request may outlive (the caller's
    deadline): each candidate request's timeout is cut to it, so a build or a call still
    running then is killed (a ``timeout`` death). Reference requests keep their own."""

    freeze_ledgers: list[FreezeLedger] = field(default_factory=list)
    """What /proc showed while each candidate worker was frozen between its requests (one
    per candidate worker started, restarts included)."""

    _replay: ReferenceReplay | None = None
    _candidate_answered: bool = False
    """Whether the current candidate worker has answered a call (its first call may compile)."""
    _plan_timeouts: int = 0
    """Size estimates that ran out of time: past :data:`MAX_PLAN_TIMEOUTS`, no more are asked."""

    def __post_init__(self) -> None:
        if self.memo is not None:
            self._replay = ReferenceReplay(self.memo, may_store=lambda: self.contained)

    def _spec(self, role: str, label: str | None = None) -> WorkerSpec:
        index = self.candidate_starts if role == "candidate" else 0
        label = label or role
        root = self.root
        if role == "reference" and label == "reference" and self.memo is not None:
            # A kept reference worker outlives this pair: its folder is the memo's.
            root, index = self.memo.root, self.memo.next_reference_index()
        workdir = root / f"{label}-{index}"
        return WorkerSpec(
            role=role,
            task_path=str(self.task.path.resolve()),
            task_source=self.task.text,
            candidate_path=(
                str(self.candidate_path.resolve())
                if role == "candidate" and self.candidate_path is not None
                else None
            ),
            device=self.settings.device,
            dtype=self.settings.dtype,
            # Pools sized to the machine: correctness runs at its thread count, and each
            # timing request narrows them to worker_threads() (see workers/threads.py).
            threads=self.settings.threads if self.settings.device == "cpu" else None,
            workdir=str(workdir),
            log_path=str(root / f"{label}-{index}.log"),
            probes=self.settings.integrity_probes,
            readable_paths=list(self.readable_paths) if role == "candidate" else [],
            own_folder=self._own_folder() if role == "candidate" else [],
            **(self._confinement(workdir) if role == "candidate" else {}),
            module_mode=self.settings.mode,
        )

    def _own_folder(self) -> list[str]:
        """The candidate's own folder as its audit hooks read it: folders end with ``/``."""
        if self.candidate_path is None:
            return []
        own = own_folder(self.candidate_path.resolve())
        return [p if p.endswith("/") or Path(p).is_file() else p + "/" for p in own.readable]

    def _confinement(self, workdir: Path) -> dict[str, Any]:
        """The candidate's sandbox plan and the build caches made for it."""
        builds = candidate_build_cache(self.candidate_path)
        environment = candidate_environment(
            os.environ,
            scratch=str(workdir),
            build_caches={
                variable: str(builds / folder) for variable, folder in BUILD_CACHE_VARIABLES.items()
            },
        )
        if not self.settings.sandbox:
            return {"environment": environment}
        workdir.mkdir(parents=True, exist_ok=True)
        candidate = self.candidate_path.resolve() if self.candidate_path else None
        # The task's own files (a GPU MODE task's sources, which its wrapper imports from
        # their folder) with their folders, unless a folder holds something protected.
        sources = [self.task.path.resolve(), *(Path(p).resolve() for p in self.readable_paths)]
        readable = [*readable_defaults(), *(str(p) for p in sources)]
        readable += [str(p.parent) for p in sources if p.parent != Path(tempfile.gettempdir())]
        own = own_folder(candidate) if candidate is not None else OwnFolder([], [])
        readable += [p.rstrip("/") for p in own.readable]
        plan = SandboxPlan(
            scratch=str(workdir),
            writable=[str(builds)],
            readable=grantable(readable),
            listable=own.listable,
            cuda=self.settings.device == "cuda",
        )
        return {"environment": environment, "sandbox": asdict(plan)}

    def _start(self, role: str, label: str | None = None) -> WorkerProcess:
        worker = WorkerProcess(
            spec=self._spec(role, label),
            memory_limit_bytes=int(self.settings.memory_limit_gib * 2**30),
        )
        worker.start()
        if worker.freezer is not None:
            self.freeze_ledgers.append(worker.freezer.ledger)
        return worker

    def start_reference(self) -> None:
        warm = self.memo.borrow() if self.memo is not None else None
        if warm is not None:
            self.reference = warm.worker
            assert self._replay is not None
            self._replay.actual = warm.history
            return
        self.reference = self._start("reference")
        if self._replay is not None:
            self._replay.restarted()

    def start_candidate(self) -> Response:
        """Start the candidate worker and build (import) the candidate in it."""
        if self.candidate is not None:
            self.candidate.close(graceful=False)
        self.candidate_starts += 1
        self._candidate_answered = False
        self.candidate = self._start("candidate")
        response = self.candidate.request(
            BuildRequest(), timeout_s=self._candidate_timeout(self.settings.build_timeout_s)
        )
        self.contained = self.contained and _walls_held(self.candidate)
        if response.reply is not None and response.ok and self.build_s is None:
            self.build_s = response.reply.duration_s
        return response

    def restart(self) -> Response:
        """Fresh reference and candidate workers (the candidate rebuilt), after a death."""
        if self.reference is not None:
            self.reference.close()
        self.start_reference()
        return self.start_candidate()

    def prepare(self, knobs: dict[str, int], init_seed: int) -> Handover:
        """Build both models at ``knobs``: the reference first, then the candidate with the
        reference's weights handed over (the one place this hand-over is written)."""
        reference = self.ask_reference(prepare_request(knobs, init_seed))
        if not reference.ok:
            return Handover(reference, None)
        names = list(reference.data.state_names)
        candidate = self.ask_candidate(prepare_request(knobs, init_seed, names), reference.tensors)
        return Handover(reference, candidate)

    def ask_reference(
        self, request: Request[ReplyT], tensors: Sequence[Any] = ()
    ) -> Response[ReplyT]:
        """Ask the reference worker (restarted first if it died)."""
        assert self.reference is not None
        if isinstance(request, PlanRequest) and self._plan_timeouts >= MAX_PLAN_TIMEOUTS:
            return Response(
                death=WorkerDeath(
                    DeathCause.TIMEOUT,
                    f"not sized: {self._plan_timeouts} size estimates of this task ran past "
                    f"{PLAN_TIMEOUT_S:g} s already",
                )
            )
        response = self._ask_reference(request, tensors)
        if (
            isinstance(request, PlanRequest)
            and response.death is not None
            and response.death.cause is DeathCause.TIMEOUT
        ):
            self._plan_timeouts += 1
        return response

    def _ask_reference(
        self, request: Request[ReplyT], tensors: Sequence[Any] = ()
    ) -> Response[ReplyT]:
        assert self.reference is not None
        if self.reference.death is not None:
            self.reference.close()
            self.start_reference()
        if self._replay is not None and self.memo is not None and not self.memo.closed:
            replayed: Response[ReplyT] = self._replay.ask(
                self.reference, request, list(tensors), self._timeout(request)
            )
            replayed.reply_model = request.reply_model
            return replayed
        return self.reference.request(request, tensors, timeout_s=self._timeout(request))

    def ask_baseline(
        self, request: Request[ReplyT], tensors: Sequence[Any] = ()
    ) -> Response[ReplyT]:
        """Ask the baseline worker (a reference worker of its own), started on first use and
        restarted if it died."""
        if self.baseline is None or self.baseline.death is not None:
            if self.baseline is not None:
                self.baseline.close()
            self.baseline = self._start("reference", label="baseline")
        return self.baseline.request(request, tensors, timeout_s=self._timeout(request))

    def ask_candidate(
        self, request: Request[ReplyT], tensors: Sequence[Any] = ()
    ) -> Response[ReplyT]:
        """Ask the candidate worker (a dead one answers with its death)."""
        assert self.candidate is not None
        return self._answered(
            request.op,
            self.candidate.request(
                request, tensors, timeout_s=self._candidate_timeout(self._candidate_call_timeout())
            ),
        )

    def submit_candidate(
        self, request: Request[ReplyT], tensors: Sequence[Any] = ()
    ) -> Submitted[ReplyT]:
        """Send the candidate worker a request whose reply :meth:`collect_candidate` waits for."""
        assert self.candidate is not None
        return self.candidate.submit(
            request, tensors, timeout_s=self._candidate_timeout(self._candidate_call_timeout())
        )

    def collect_candidate(self, submitted: Submitted[ReplyT]) -> Response[ReplyT]:
        assert self.candidate is not None
        return self._answered(submitted.op, self.candidate.collect(submitted))

    def _candidate_call_timeout(self) -> float:
        """The call timeout, or the build timeout until the candidate answered a call: a
        candidate that compiles lazily (``torch.compile``, Triton's JIT, numba without a
        signature) builds its kernels in its first call. Inductor's first compile took over
        120 s on a loaded 2-core machine, which made an honest kernel ``broken``."""
        if self._candidate_answered:
            return self.settings.call_timeout_s
        return max(self.settings.call_timeout_s, self.settings.build_timeout_s)

    def _answered(self, op: str, response: Response) -> Response:
        if response.reply is not None and op in CALL_OPS:
            self._candidate_answered = True
        return response

    def _timeout(self, request: Request[Any]) -> float:
        if isinstance(request, PlanRequest):
            # A meta-device estimate allocates nothing and takes well under a second; one
            # that runs on builds a model whose knob counts Python objects (an MoE's experts
            # past 2**31 rows: 100 s each, 413 s for one task's sizing). Past this the knob
            # is not sized, so not run.
            return min(self.settings.call_timeout_s, PLAN_TIMEOUT_S)
        return self.settings.call_timeout_s

    def _candidate_timeout(self, timeout_s: float) -> float:
        """``timeout_s`` cut to the caller's deadline (at least a moment, so a request sent
        at the deadline is refused by its timeout rather than never sent)."""
        if self.deadline is None:
            return timeout_s
        return max(MIN_DEADLINE_TIMEOUT_S, min(timeout_s, self.deadline - time.monotonic()))

    @property
    def candidate_death(self) -> WorkerDeath | None:
        return self.candidate.death if self.candidate is not None else None

    def close(self) -> None:
        if self.candidate is not None:
            self.candidate.close(graceful=False)
        if self.baseline is not None:
            self.baseline.close(graceful=False)
        if self.reference is not None:
            if self.memo is not None and self._replay is not None and self.contained:
                # Kept only when no candidate could have reached it (its own pid namespace,
                # Landlock and seccomp, seen from outside); the memo closes a dead one.
                self.memo.give_back(WarmReference(self.reference, list(self._replay.actual)))
            else:
                self.reference.close()
        self.candidate = self.reference = self.baseline = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> WorkerPair:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _walls_held(worker: WorkerProcess) -> bool:
    """Whether a candidate worker is known to be walled off from its siblings: it said which
    mechanisms it entered (before any candidate code ran), they include the pid namespace
    and Landlock, and /proc shows no gap. Unknown (no greeting, no sandbox) counts as not."""
    said, outside = worker.sandbox, worker.confinement
    if worker.spec.sandbox is None or said is None or outside is None:
        return False
    entered = set(said.get("enforced", []))
    landlock = any(str(m).startswith("landlock") for m in entered)
    return "pid-namespace" in entered and landlock and not outside.missing()
