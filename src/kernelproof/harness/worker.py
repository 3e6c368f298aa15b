"""The code that runs inside a worker process: builds models, runs calls, answers requests.

This module is the request loop (parse, dispatch through :data:`HANDLERS`, reply) and the
operations that build and run models; the timed calls are in :mod:`kernelproof.harness.
timed_calls`, the tensor helpers in :mod:`kernelproof.harness.tensors`, the messages in
:mod:`kernelproof.protocol.requests`. The same harness serves both roles. As the reference worker it also computes the float64
oracle and plans shapes. As the candidate worker it snapshots every function it relies on
before importing the candidate, and runs the integrity probes around each call.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

# Importing torch._dynamo replaces torch.manual_seed with a wrapper (torch/_dynamo/__init__.py).
# Where torch imported it lazily after the tamper snapshot (on CUDA, on an H200), every honest
# candidate read as having replaced torch.manual_seed. Imported with the harness, before any
# snapshot, the wrapper is part of the baseline.
import torch._dynamo

from kernelproof.checks.forward_error import forward_bounds
from kernelproof.checks.op_recorder import OpRecorder
from kernelproof.checks.oracle import oracle_model
from kernelproof.checks.probes import CallableSnapshot, CallProbe
from kernelproof.harness import block_gather, input_pool, timed_calls
from kernelproof.harness.prepared import Prepared
from kernelproof.harness.tensors import (
    apply_mode,
    describe,
    load_matching,
    mode_of,
    plain_tensor,
    state_tensors,
    synchronize,
    torch_dtype,
    working_dtype,
)
from kernelproof.harness.threads import thread_count
from kernelproof.harness.timed_calls import TimedCalls
from kernelproof.protocol import transport
from kernelproof.protocol.messages import CapturedError, Phase, WorkerReply
from kernelproof.protocol.requests import (
    BuildReply,
    BuildRequest,
    ExitRequest,
    PlanReply,
    PlanRequest,
    PrepareReply,
    PrepareRequest,
    ReplyData,
    RunReply,
    RunRequest,
    SettleRequest,
    WorkReply,
    WorkRequest,
    parse_request,
)
from kernelproof.protocol.spec import WorkerSpec
from kernelproof.roofline.work import count_work
from kernelproof.schema.variant import InputVariant, VariantKind
from kernelproof.tasks.candidate_knobs import rendered_for_construction, shared_knobs
from kernelproof.tasks.inputs import build_inputs, oracle_inputs, seed_everything
from kernelproof.tasks.module import import_file, module_from_source
from kernelproof.tasks.planning import estimate_call
from kernelproof.tasks.saved_inputs import rebuild
from kernelproof.tasks.source import parse_task
from kernelproof.timing import call_timer


@dataclass
class Harness:
    spec: WorkerSpec
    conn: Connection
    candidate: types.ModuleType | None = None
    candidate_knobs: tuple[str, list[str]] | None = None
    """The candidate module's source and the task's knobs it copies: re-rendered at
    each prepare (:mod:`kernelproof.tasks.candidate_knobs`)."""
    prepared: Prepared | None = None
    snapshot: Any = None
    probe: Any = None
    audit: Any = None
    render_cache: dict[str, types.ModuleType] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    settling: Any = None
    """The deferred probes of the last call (:attr:`RunRequest.defer_probes`): a
    ``(variant name, Settling)`` pair that runs after its reply is sent."""
    warm_ups: int = 0
    """Unrecorded warm-up calls made so far (one per prepared model that may need it)."""
    compiles_lazily: bool = False
    """Whether a recorded call of the candidate ran compiled or custom kernels (a graph
    ``torch.compile`` made, a Triton launch, a numba or extension function)."""
    timed: TimedCalls = field(init=False)
    """The ``time`` and ``fetch`` operations, with the timer and the last batch's outputs."""

    def __post_init__(self) -> None:
        self.timed = TimedCalls(self)

    # -- the loop --------------------------------------------------------------------------

    def serve(self) -> None:
        send, receive = transport.send, transport.receive  # saved before any candidate import
        while True:
            try:
                message = receive(self.conn)
            except EOFError:
                return
            phase = Phase.CALL
            started = time.perf_counter()
            tensors_out: list[Any] = []
            request: Any = None
            try:
                request = parse_request(message.header)
                if isinstance(request, ExitRequest):
                    return
                phase = request.phase
                if self.settling is not None and request.op not in SETTLED_AROUND:
                    self._settle()
                data, tensors_out = HANDLERS[request.op](self, request, message.tensors)
                reply = WorkerReply(ok=True, phase=phase, data=data.dump())
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                reply = WorkerReply(ok=False, phase=phase, error=CapturedError.from_exception(exc))
                tensors_out = []
            reply.duration_s = time.perf_counter() - started
            # The tamper diff walks thousands of callables (milliseconds): not inside a timed
            # batch's request, whose wall time the controller compares between the workers;
            # the fetch that follows every round runs it.
            op = getattr(request, "op", None)
            deferred = self.settling is not None
            reply.observations = self._drain_observations(snapshot=op != "time" and not deferred)
            # The harness's own channel (a socket that carries memory files) is not the
            # candidate's network use.
            with self.audit.quiet() if self.audit is not None else contextlib.nullcontext():
                send(self.conn, reply.model_dump(mode="json"), tensors_out)
            # At least THAWED_REQUEST_WAIT_S: the controller freezes this process between
            # requests, so the probe's wait can run out while it is stopped, and on waking
            # (just before the next request is written) the request is not there yet; settled
            # then, a write into this call's outputs during the next call went unseen.
            if deferred and not self.conn.poll(
                max(THAWED_REQUEST_WAIT_S, self.settling[1].deadline - time.monotonic())
            ):
                # The probe's wait ran out before the next request came: settle now. When
                # the request comes first, the wait passes while it runs (op_run).
                self._settle()

    def _settle(self) -> None:
        """Run the last call's deferred probes and the tamper diff, now that its reply is on
        its way; what they find goes with the next reply, naming the call's variant."""
        variant, settling = self.settling
        self.settling = None
        self._add_pending(variant, settling.settle() + self._drain_observations())

    @contextlib.contextmanager
    def _settling_around(self) -> Iterator[None]:
        """Settle the last call around the request served inside: its threads and the tamper
        diff before, the re-read of its outputs after, so that the stability wait passes
        while this request computes instead of before it. After also when the request fails:
        the last call's findings still come back."""
        if self.settling is None:
            yield
            return
        earlier = self._settle_around_call()
        try:
            yield
        finally:
            self._reread(earlier)

    def _settle_around_call(self) -> tuple[str, Any]:
        """The first half of :meth:`_settling_around`.

        Sound because the last call's outputs are still held (by its ``Settling``): no
        allocation of the next call can reuse their memory, and an honest call never writes
        to outputs it returned before. Anything that changes them now is work the last call
        left running (HACKS row 6), or a candidate writing into a returned output: both are
        reported as ``output-unstable``, as before. What the controller judged was sent
        before either."""
        variant, settling = self.settling
        self.settling = None
        self._add_pending(variant, settling.threads_left() + self._drain_observations())
        return variant, settling

    def _reread(self, earlier: tuple[str, Any]) -> None:
        variant, settling = earlier
        self._add_pending(variant, settling.outputs_changed())

    def _add_pending(self, variant: str, found: list[dict[str, Any]]) -> None:
        for item in found:
            item.setdefault("variant", variant)
        self.pending += found

    def _drain_observations(self, *, snapshot: bool = True) -> list[dict[str, Any]]:
        found, self.pending = self.pending, []
        if snapshot and self.snapshot is not None:
            changed = self.snapshot.changed()
            if changed:
                from kernelproof.checks.probes import observation

                found.append(
                    observation(
                        "tampering",
                        f"the candidate replaced {len(changed)} function(s) the harness or "
                        f"torch relies on: {', '.join(changed[:8])}",
                        replaced=changed[:50],
                    )
                )
                self.snapshot = type(self.snapshot).take(self.snapshot.extra)  # report once
        if self.audit is not None:
            found.extend(self.audit.drain())
        return found

    # -- operations ------------------------------------------------------------------------

    def op_build(self, request: BuildRequest, tensors: list[Any]) -> tuple[BuildReply, list[Any]]:
        """Import the candidate (the build: C++/numba/Triton compile here). Reference: no-op."""
        if self.spec.role != "candidate":
            return BuildReply(), []
        if not self.spec.probes:
            return self._import_candidate(), []

        self.snapshot = CallableSnapshot.take(
            {
                "kernelproof.protocol.transport.send": transport.send,
                "kernelproof.protocol.transport.receive": transport.receive,
                "kernelproof.timing.call_timer._clock_ns": call_timer._clock_ns,
                "kernelproof.timing.call_timer._cuda_synchronize": call_timer._cuda_synchronize,
                "kernelproof.timing.call_timer.CallTimer.time_call": call_timer.CallTimer.time_call,
                "kernelproof.timing.call_timer.CallTimer.flush": call_timer.CallTimer.flush,
                # A stand-in evictor that evicts nothing would give the candidate warm caches.
                "kernelproof.timing.call_timer._line_evictor": call_timer._line_evictor,
                "kernelproof.timing.cache_eviction.LineEvictor.evict": call_timer.LineEvictor.evict,
                # A gather that leaves the pooled inputs in the cache, while saying they went
                # past it, would skip their flush.
                "kernelproof.harness.block_gather._block_gather": block_gather._block_gather,
                "kernelproof.harness.block_gather.BlockGather.use": block_gather.BlockGather.use,
                "kernelproof.harness.input_pool.InputPool.inputs_for": input_pool.InputPool.inputs_for,
                "kernelproof.harness.input_pool.PooledBlocks.change": input_pool.PooledBlocks.change,
                "kernelproof.harness.timed_calls.TimedInputs.cold": timed_calls.TimedInputs.cold,
            }
        )
        self.probe = CallProbe()
        self.audit = _start_audit(self.spec)
        return self._import_candidate(), []

    def _import_candidate(self) -> BuildReply:
        assert self.spec.candidate_path is not None
        started = time.perf_counter()
        self.candidate = import_file(self.spec.candidate_path, "kernelproof_candidate")
        self._find_candidate_knobs()
        if not isinstance(getattr(self.candidate, "ModelNew", None), type):
            raise TypeError(f"{self.spec.candidate_path}: `ModelNew` is not a class after import")
        return BuildReply(import_s=time.perf_counter() - started)

    def _find_candidate_knobs(self) -> None:

        assert self.spec.candidate_path is not None
        try:
            text = Path(self.spec.candidate_path).read_text(encoding="utf-8")
            task = parse_task(self.spec.task_source, self.spec.task_path)
        except (OSError, UnicodeDecodeError, ValueError):
            return
        shared = shared_knobs(task, text)
        if shared:
            self.candidate_knobs = (text, list(shared))

    def _construct_candidate(
        self, knobs: dict[str, int], init_inputs: list[Any], init_seed: int
    ) -> Any:
        """``ModelNew(*init_inputs)``, with the task's knobs its module copies set to this
        shape's values while it is constructed (:mod:`kernelproof.tasks.candidate_knobs`)."""
        assert self.candidate is not None
        if self.candidate_knobs is None:
            return self.candidate.ModelNew(*init_inputs)

        source, shared = self.candidate_knobs
        with rendered_for_construction(self.candidate, source, knobs, shared):
            # Seeded again: a re-run derived line may have drawn numbers, and the model's
            # random init must match the reference's (seeded just before its constructor).
            seed_everything(init_seed)
            return self.candidate.ModelNew(*init_inputs)

    def op_prepare(
        self, request: PrepareRequest, tensors: list[Any]
    ) -> tuple[PrepareReply, list[Any]]:
        """Render the task at the requested knobs and construct the model."""
        with self._settling_around():
            return self._prepare(request, tensors)

    def _prepare(
        self, request: PrepareRequest, tensors: list[Any]
    ) -> tuple[PrepareReply, list[Any]]:

        knobs = dict(request.knobs)
        task = self._task_module(knobs)
        # Seeded before both, as KernelBench does: random init inputs agree across workers.
        seed_everything(request.init_seed)
        init_inputs = list(task.get_init_inputs())
        seed_everything(request.init_seed)
        dtype = torch_dtype(self.spec.dtype)
        if self.spec.role == "reference":
            model = task.Model(*init_inputs)
        else:
            assert self.candidate is not None
            model = self._construct_candidate(knobs, init_inputs, request.init_seed)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.spec.device)
            if dtype is not None:
                model = model.to(dtype)
            apply_mode(model, self.spec.module_mode)
        data = PrepareReply()
        out_tensors: list[Any] = []
        oracle = None
        if self.spec.role == "reference":
            names, out_tensors = state_tensors(model)
            data = PrepareReply(state_names=names, module_mode=mode_of(model))
            oracle = oracle_model(model)
        else:
            names = list(request.state_names or [])
            data = PrepareReply(weights=load_matching(model, dict(zip(names, tensors))))
        self.prepared = Prepared(knobs=knobs, task=task, model=model, oracle=oracle, dtype=dtype)
        return data, out_tensors

    def op_run(self, request: RunRequest, tensors: list[Any]) -> tuple[RunReply, list[Any]]:
        """Build the variant's inputs, call the model, return outputs (and the oracle's)."""
        assert self.prepared is not None, "run before prepare"
        inputs = self._inputs(request, tensors)
        with self._settling_around():
            return self._call(request, tensors, inputs)

    def _call(
        self, request: RunRequest, tensors: list[Any], inputs: list[Any]
    ) -> tuple[RunReply, list[Any]]:

        assert self.prepared is not None
        data = RunReply()
        if not self.prepared.warmed and self.spec.role == "candidate" and self._may_compile():
            # One unrecorded call first, so that lazy compilation (torch.compile, numba) is
            # not what the op audit and the probes see. On inputs of its own: a candidate that
            # changes its inputs must not change the call that counts.
            with torch.no_grad():
                self.prepared.model(*self._inputs(request, [t.clone() for t in tensors]))
            synchronize(self.spec.device)
            self.warm_ups += 1
        self.prepared.warmed = True
        state = self.probe.before(inputs) if self.probe is not None else None
        recorder = OpRecorder(working_dtype=working_dtype(inputs, self.prepared.dtype))
        record = self.spec.probes and request.record_ops
        started = time.perf_counter()
        with (
            torch.no_grad(),
            thread_count(request.threads),
            recorder if record else contextlib.nullcontext(),
        ):
            raw = self.prepared.model(*inputs)
            if self.probe is None:
                synchronize(self.spec.device)
            # With probes, the stability probe snapshots the output *before* synchronizing:
            # work left running on a side stream shows up as a difference afterwards.
        data.call_s = time.perf_counter() - started
        if record:
            data.ops = recorder.summary()
            self.compiles_lazily = self.compiles_lazily or bool(
                data.ops.get("compiled") or data.ops.get("custom")
            )
        outputs = list(raw) if isinstance(raw, (tuple, list)) else [raw]
        if self.probe is not None and state is not None:
            # On CUDA the outputs must wait for the stability probe's synchronize before they
            # are sent; on the CPU they are sent as the call left them.
            deferred = request.defer_probes and self.spec.device == "cpu"
            found, settling = self.probe.after_call(
                state, inputs, outputs, request.stability_delay_s, deferred
            )
            self.pending += found
            if deferred:
                self.settling = (request.variant.name, settling)
            else:
                self.pending += settling.settle()
        data.outputs = [describe(o) for o in outputs]
        if self.spec.device == "cuda":
            data.cuda_memory = _cuda_memory()
        if self.spec.role == "reference":
            data.signature = _signature_of(inputs)
        sendable = [plain_tensor(o) for o in outputs if isinstance(o, torch.Tensor)]
        bounds: list[Any] = []
        if self.spec.role == "reference" and request.oracle:
            try:
                if self.prepared.oracle is None:
                    raise TypeError("the model cannot be copied (copy.deepcopy failed)")
                with torch.no_grad():
                    raw64 = self._oracle_outputs(request, inputs, bounds)
            except Exception as exc:
                if not request.oracle_fallback:
                    raise
                data.oracle_fallback = f"{type(exc).__name__}: {str(exc)[:300]}"
                raw64 = raw
            oracle_outputs = list(raw64) if isinstance(raw64, (tuple, list)) else [raw64]
            data.oracle_count = len(oracle_outputs)
            sendable += [plain_tensor(o) for o in oracle_outputs]
        if self.spec.role == "reference" and request.return_inputs:
            input_tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
            data.input_count = len(input_tensors)
            sendable += [plain_tensor(x) for x in input_tensors]
        if bounds:
            data.bound_depths = [b.depth if b is not None else None for b in bounds]
            for b in bounds:
                sendable += (
                    [b.systematic, b.magnitude]
                    if b is not None
                    else [torch.empty(0), torch.empty(0)]
                )
        return data, sendable

    def _oracle_outputs(self, request: RunRequest, inputs: list[Any], bounds: list[Any]) -> Any:
        """The float64 oracle's outputs; with ``forward_bound``, their forward error bounds
        appended to ``bounds``. A failure of the bound alone (an op its dispatch mode trips on)
        costs only the bound: the oracle runs again without it."""
        assert self.prepared is not None
        oracle = self.prepared.oracle
        if request.forward_bound:
            try:
                raw64, found = forward_bounds(lambda: oracle(*oracle_inputs(inputs)))
                bounds += found
                return raw64
            except Exception:  # noqa: BLE001 - the plain oracle below says what is wrong
                pass
        return oracle(*oracle_inputs(inputs))

    def op_settle(self, request: SettleRequest, tensors: list[Any]) -> tuple[ReplyData, list[Any]]:
        """Nothing to do: the reply carries what the deferred probes found."""
        return ReplyData(), []

    def op_work(self, request: WorkRequest, tensors: list[Any]) -> tuple[WorkReply, list[Any]]:
        """FLOPs and compulsory bytes of one reference call, for the speed-of-light floor."""
        assert self.prepared is not None, "work before prepare"
        variant = InputVariant(name="work", kind=VariantKind.SEED, seed=request.seed)
        inputs = build_inputs(
            self.prepared.task, variant, device=self.spec.device, dtype=self.prepared.dtype
        )
        work = count_work(self.prepared.model, inputs)
        return WorkReply(
            flops=work.flops,
            bytes=work.bytes,
            reference_bytes=work.reference_bytes,
            uncounted_ops=list(work.uncounted_ops)[:20],
        ), []

    def op_plan(self, request: PlanRequest, tensors: list[Any]) -> tuple[PlanReply, list[Any]]:
        """Estimate bytes and FLOPs of one call at the given knobs without allocating."""
        task = self._task_module(dict(request.knobs))
        estimate = estimate_call(task, torch_dtype(self.spec.dtype))
        if self.spec.device == "cuda":
            estimate["device_free_bytes"] = float(torch.cuda.mem_get_info()[0])
        return PlanReply.model_validate(estimate), []

    # -- helpers ---------------------------------------------------------------------------

    def _inputs(self, request: RunRequest, tensors: list[Any]) -> list[Any]:
        """A run's inputs: the saved arguments sent with the request, else the variant's,
        built from its seed."""
        assert self.prepared is not None
        if request.given is not None:
            return rebuild(request.given, tensors, self.spec.device)
        return build_inputs(
            self.prepared.task, request.variant, device=self.spec.device, dtype=self.prepared.dtype
        )

    def _may_compile(self) -> bool:
        """Whether the next call at a new shape may compile before it computes: always for
        the first model; later only once the candidate has shown compiled or custom kernels,
        loaded numba, or had torch.compile capture a frame. A plain PyTorch candidate skips
        the warm-up of every later shape group (20 of them in the softmax example: 70 ms of
        a 0.7 s verification). One that hides its compiler from these signs only lets its
        own compile-time ops into the op audit."""
        if self.warm_ups == 0 or self.compiles_lazily or "numba" in sys.modules:
            return True
        dynamo = sys.modules.get("torch._dynamo.utils")
        counters = getattr(dynamo, "counters", None)
        try:
            return bool(counters is not None and sum(counters["frames"].values()))
        except (TypeError, KeyError, AttributeError):
            return True

    def _task_module(self, knobs: dict[str, int]) -> types.ModuleType:
        key = repr(sorted(knobs.items()))
        if key not in self.render_cache:
            source = parse_task(self.spec.task_source, self.spec.task_path)
            name = f"kernelproof_task_{len(self.render_cache)}"
            self.render_cache[key] = module_from_source(
                source.render(knobs), self.spec.task_path, name
            )
        return self.render_cache[key]


#: How long a harness waits for the next request after its reply before it settles the last
#: call's deferred probes, at least (see :meth:`Harness.serve`).
THAWED_REQUEST_WAIT_S = 0.25

#: Requests that settle the last call's deferred probes around themselves
#: (:meth:`Harness._settling_around`); any other settles them first.
SETTLED_AROUND = frozenset({"run", "prepare"})

#: The operation each request names, and the method that serves it (``exit`` ends the loop).
HANDLERS: dict[str, Callable[[Harness, Any, list[Any]], tuple[ReplyData, list[Any]]]] = {
    "build": Harness.op_build,
    "prepare": Harness.op_prepare,
    "run": Harness.op_run,
    "time": lambda harness, request, tensors: harness.timed.op_time(request, tensors),
    "fetch": lambda harness, request, tensors: harness.timed.op_fetch(request, tensors),
    "work": Harness.op_work,
    "plan": Harness.op_plan,
    "settle": Harness.op_settle,
}


def _cuda_memory() -> dict[str, int]:
    """The current device's allocated, reserved and total memory, in bytes."""
    import torch

    device = torch.cuda.current_device()
    return {
        "allocated": int(torch.cuda.memory_allocated(device)),
        "reserved": int(torch.cuda.memory_reserved(device)),
        "total": int(torch.cuda.get_device_properties(device).total_memory),
    }


def _signature_of(inputs: list[Any]) -> dict[str, Any] | None:
    """The inputs' call signature for the report's envelope, or None when it cannot be read
    (the cell then stays out of the envelope; the run itself must not fail over it)."""
    from kernelproof.schema.envelope import CallSignature

    try:
        return CallSignature.of(inputs).model_dump(mode="json")
    except Exception:  # noqa: BLE001 - an unreadable signature only narrows the envelope
        return None


def _start_audit(spec: WorkerSpec) -> Any:
    from kernelproof.checks.audit_hooks import AuditRecorder

    return AuditRecorder.install(
        spec.workdir, spec.candidate_path, spec.readable_paths, spec.own_folder
    )


def worker_main(conn: Connection, spec: WorkerSpec) -> None:
    """Entry point of a worker process (started by the forkserver)."""
    from kernelproof.sandbox import die_with_parent

    # Dies with the forkserver, which dies with the controller: a frozen worker cannot see
    # its controller go, and a hanging one must not outlive it.
    die_with_parent()
    os.setsid()  # own process group: the controller kills the candidate's children with it
    os.makedirs(spec.workdir, exist_ok=True)
    log = os.open(spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.chdir(spec.workdir)
    from kernelproof.harness.allocator import retain_freed_memory

    retain_freed_memory()
    if spec.role == "candidate":
        # Exactly the environment the controller built (workers/candidate_environment.py):
        # nothing the forkserver's own (trusted) environment held beyond it.
        os.environ.clear()
    os.environ.update(spec.environment)
    if "TMPDIR" in spec.environment:
        import tempfile

        # tempfile caches its folder on first use, and the forkserver used it (multiprocessing
        # makes its socket folder there) before TMPDIR was the worker's own.
        tempfile.tempdir = spec.environment["TMPDIR"]
    if spec.threads is not None:
        # Before torch's and numba's pools start, so that every library uses the same count.
        for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            os.environ[variable] = str(spec.threads)
    if spec.sandbox is not None:
        _confine(conn, spec)
    import torch

    if spec.threads is not None:
        torch.set_num_threads(spec.threads)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    Harness(spec=spec, conn=conn).serve()
    conn.close()


def _listable(path: str) -> bool:
    try:
        os.listdir(path or ".")
        return True
    except NotADirectoryError:
        return True  # a zip archive on the path
    except OSError:
        return False


def _confine(conn: Connection, spec: WorkerSpec) -> None:
    """Enter the OS sandbox, then tell the controller what is in force, before any candidate
    code exists in the process (so the message is the harness's own, not a forgery; the
    controller checks it from outside anyway)."""
    from multiprocessing import forkserver, resource_tracker

    from kernelproof import sandbox
    from kernelproof.protocol import transport

    # Descriptors the forkserver hands every child: the resource tracker's pipe (whose
    # commands unlink named segments at exit) and the forkserver's liveness pipe. A candidate
    # needs neither.
    for holder, attribute in (
        (resource_tracker._resource_tracker, "_fd"),
        (forkserver._forkserver, "_forkserver_alive_fd"),
    ):
        handle = getattr(holder, attribute, None)
        if isinstance(handle, int):
            try:
                os.close(handle)
            except OSError:
                pass
            setattr(holder, attribute, None)
    assert spec.sandbox is not None, "only a sandboxed worker confines itself"
    state = sandbox.enter(sandbox.SandboxPlan(**spec.sandbox))
    # Import paths the sandbox does not grant (a test runner's root, say) would only make every
    # later import fail an open there, which the audit hooks would then report.
    sys.path[:] = [p for p in sys.path if _listable(p)]
    sys.path_importer_cache.clear()
    transport.send(
        conn, {"hello": True, "sandbox": {"enforced": state.enforced, "missing": state.missing}}
    )
