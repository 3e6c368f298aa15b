"""The code that runs inside a worker process: builds models, runs calls, answers requests.

The same harness serves both roles. As the reference worker it also computes the float64
oracle and plans shapes. As the candidate worker it snapshots every function it relies on
before importing the candidate, and runs the integrity probes around each call.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import time
import types
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from kernelproof.workers.threads import thread_count

#: Request keys each operation needs; anything else in a request is ignored.
Request = dict[str, Any]


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
    module_mode: str = "as-built"  # "as-built", "eval" or "train": see Settings.mode
    sandbox: dict[str, Any] | None = None
    """The candidate's :class:`~kernelproof.workers.sandbox.SandboxPlan` (as a dict), or None
    for a worker that runs trusted code only."""

    environment: dict[str, str] = field(default_factory=dict)
    """Variables set before anything is imported: the build caches made for this worker."""


@dataclass
class _Prepared:
    knobs: dict[str, int]
    task: types.ModuleType
    model: Any
    oracle: Any = None
    dtype: Any = None
    warmed: bool = False
    compiled: Any = None
    graph: Any = None
    output_bytes: int = 0
    """Bytes of one timed call's outputs, from the last batch (0 before the first)."""


@dataclass
class Harness:
    spec: WorkerSpec
    conn: Connection
    candidate: types.ModuleType | None = None
    prepared: _Prepared | None = None
    snapshot: Any = None
    probe: Any = None
    audit: Any = None
    render_cache: dict[str, types.ModuleType] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    timer: Any = None
    timed_outputs: dict[str, list[list[Any]]] = field(default_factory=dict)
    """The outputs of the last timed batch, per baseline (eager, compile, graph)."""

    # -- the loop --------------------------------------------------------------------------

    def serve(self) -> None:
        from kernelproof.workers import transport
        from kernelproof.workers.messages import CapturedError, Phase, WorkerReply

        send, receive = transport.send, transport.receive  # saved before any candidate import
        while True:
            try:
                message = receive(self.conn)
            except EOFError:
                return
            op = message.header.get("op")
            if op == "exit":
                return
            handler = getattr(self, f"op_{op}", None)
            phase = Phase(message.header.get("phase", "call"))
            started = time.perf_counter()
            tensors_out: list[Any] = []
            try:
                if handler is None:
                    raise ValueError(f"unknown request {op!r}")
                data, tensors_out = handler(message.header, message.tensors)
                reply = WorkerReply(ok=True, phase=phase, data=data)
            except BaseException as exc:  # noqa: BLE001 - every failure becomes a value
                if isinstance(exc, KeyboardInterrupt):
                    raise
                reply = WorkerReply(ok=False, phase=phase, error=CapturedError.from_exception(exc))
                tensors_out = []
            reply.duration_s = time.perf_counter() - started
            # The tamper diff walks thousands of callables (milliseconds): not inside a timed
            # batch's request, whose wall time the controller compares between the workers;
            # the fetch that follows every round runs it.
            reply.observations = self._drain_observations(snapshot=op != "time")
            # The harness's own channel (a socket that carries memory files) is not the
            # candidate's network use.
            with self.audit.quiet() if self.audit is not None else contextlib.nullcontext():
                send(self.conn, reply.model_dump(mode="json"), tensors_out)

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

    def op_build(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """Import the candidate (the build: C++/numba/Triton compile here). Reference: no-op."""
        if self.spec.role != "candidate":
            return {}, []
        if not self.spec.probes:
            return self._import_candidate(), []
        from kernelproof.checks.probes import CallableSnapshot, CallProbe
        from kernelproof.workers import transport

        from kernelproof.timing import call_timer

        self.snapshot = CallableSnapshot.take(
            {
                "kernelproof.workers.transport.send": transport.send,
                "kernelproof.workers.transport.receive": transport.receive,
                "kernelproof.timing.call_timer._clock_ns": call_timer._clock_ns,
                "kernelproof.timing.call_timer._cuda_synchronize": call_timer._cuda_synchronize,
                "kernelproof.timing.call_timer.CallTimer.time_call": call_timer.CallTimer.time_call,
                "kernelproof.timing.call_timer.CallTimer.flush": call_timer.CallTimer.flush,
                # A stand-in evictor that evicts nothing would give the candidate warm caches.
                "kernelproof.timing.call_timer._line_evictor": call_timer._line_evictor,
                "kernelproof.timing.cache_eviction.LineEvictor.evict":
                    call_timer.LineEvictor.evict,
            }
        )
        self.probe = CallProbe()
        self.audit = _start_audit(self.spec)
        return self._import_candidate(), []

    def _import_candidate(self) -> dict[str, Any]:
        from kernelproof.tasks.module import import_file

        assert self.spec.candidate_path is not None
        started = time.perf_counter()
        self.candidate = import_file(self.spec.candidate_path, "kernelproof_candidate")
        if not isinstance(getattr(self.candidate, "ModelNew", None), type):
            raise TypeError(
                f"{self.spec.candidate_path}: `ModelNew` is not a class after import"
            )
        return {"import_s": time.perf_counter() - started}

    def op_prepare(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """Render the task at the requested knobs and construct the model."""
        import torch

        from kernelproof.tasks.inputs import seed_everything

        knobs = {k: int(v) for k, v in request.get("knobs", {}).items()}
        task = self._task_module(knobs)
        # Seeded before both, as KernelBench does: random init inputs agree across workers.
        seed_everything(int(request["init_seed"]))
        init_inputs = list(task.get_init_inputs())
        seed_everything(int(request["init_seed"]))
        dtype = _dtype(self.spec.dtype)
        if self.spec.role == "reference":
            model = task.Model(*init_inputs)
        else:
            assert self.candidate is not None
            model = self.candidate.ModelNew(*init_inputs)
        if isinstance(model, torch.nn.Module):
            model = model.to(self.spec.device)
            if dtype is not None:
                model = model.to(dtype)
            _apply_mode(model, self.spec.module_mode)
        data: dict[str, Any] = {}
        out_tensors: list[Any] = []
        oracle = None
        if self.spec.role == "reference":
            names, out_tensors = _state_tensors(model)
            data["state_names"] = names
            data["module_mode"] = _mode_of(model)
            oracle = _oracle_model(model)
        else:
            names = list(request.get("state_names", []))
            data["weights"] = _load_matching(model, dict(zip(names, tensors)))
        self.prepared = _Prepared(knobs=knobs, task=task, model=model, oracle=oracle, dtype=dtype)
        return data, out_tensors

    def op_run(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """Build the variant's inputs, call the model, return outputs (and the oracle's)."""
        import torch

        from kernelproof.checks.op_recorder import OpRecorder
        from kernelproof.schema.variant import InputVariant
        from kernelproof.tasks.inputs import build_inputs, oracle_inputs

        assert self.prepared is not None, "run before prepare"
        variant = InputVariant.model_validate(request["variant"])
        inputs = build_inputs(
            self.prepared.task, variant, device=self.spec.device, dtype=self.prepared.dtype
        )
        data: dict[str, Any] = {}
        if not self.prepared.warmed and self.spec.role == "candidate":
            # One unrecorded call first, so that lazy compilation (torch.compile, numba) is
            # not what the op audit and the probes see.
            with torch.no_grad():
                self.prepared.model(*build_inputs(self.prepared.task, variant,
                                                  device=self.spec.device,
                                                  dtype=self.prepared.dtype))
            _synchronize(self.spec.device)
        self.prepared.warmed = True
        state = self.probe.before(inputs) if self.probe is not None else None
        recorder = OpRecorder(working_dtype=_working_dtype(inputs, self.prepared.dtype))
        record = self.spec.probes and bool(request.get("record_ops", True))
        started = time.perf_counter()
        with torch.no_grad(), thread_count(request.get("threads")), (
                recorder if record else contextlib.nullcontext()):
            raw = self.prepared.model(*inputs)
            if self.probe is None:
                _synchronize(self.spec.device)
            # With probes, the stability probe snapshots the output *before* synchronizing:
            # work left running on a side stream shows up as a difference afterwards.
        data["call_s"] = time.perf_counter() - started
        if record:
            data["ops"] = recorder.summary()
        outputs = list(raw) if isinstance(raw, (tuple, list)) else [raw]
        if self.probe is not None and state is not None:
            self.pending += self.probe.after(
                state, inputs, outputs, float(request.get("stability_delay_s", 0.05))
            )
        data["outputs"] = [_describe(o) for o in outputs]
        sendable = [_plain_tensor(o) for o in outputs if isinstance(o, torch.Tensor)]
        if self.spec.role == "reference" and request.get("oracle", True):
            try:
                if self.prepared.oracle is None:
                    raise TypeError("the model cannot be copied (copy.deepcopy failed)")
                with torch.no_grad():
                    raw64 = self.prepared.oracle(*oracle_inputs(inputs))
            except Exception as exc:  # noqa: BLE001 - reported as a value, when asked to be
                if not request.get("oracle_fallback", False):
                    raise
                data["oracle_fallback"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                raw64 = raw
            oracle_outputs = list(raw64) if isinstance(raw64, (tuple, list)) else [raw64]
            data["oracle_count"] = len(oracle_outputs)
            sendable += [_plain_tensor(o) for o in oracle_outputs]
        if self.spec.role == "reference" and request.get("return_inputs", False):
            input_tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
            data["input_count"] = len(input_tensors)
            sendable += [_plain_tensor(x) for x in input_tensors]
        return data, sendable

    def op_time(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """Time one call per seed, each on freshly built inputs, and keep the outputs until
        the controller has picked which ones to verify."""
        import torch

        from kernelproof.schema.variant import InputVariant, VariantKind
        from kernelproof.tasks.inputs import build_inputs
        from kernelproof.timing.cache_eviction import reachable_tensors
        from kernelproof.timing.call_timer import CallTimer, GraphReplay
        from kernelproof.workers.allocator import reserve_heap

        assert self.prepared is not None, "time before prepare"
        hot = bool(request.get("hot", False))
        flush = str(request.get("cache_flush", "data"))
        if self.timer is None or (self.timer.hot, self.timer.cache_flush) != (hot, flush):
            self.timer = CallTimer.for_device(self.spec.device, hot=hot, cache_flush=flush)
        started = self.timer.clock_s()
        input_sets = [
            build_inputs(self.prepared.task,
                         InputVariant(name="timing", kind=VariantKind.SEED, seed=int(seed)),
                         device=self.spec.device, dtype=self.prepared.dtype)
            for seed in [*request["seeds"], request.get("settle_seed")] if seed is not None
        ]
        # One untimed call on its own inputs (never timed, so nothing it leaves behind can be
        # replayed): the other worker just ran on this core and evicted our code, page tables
        # and allocator state, which made each batch's first calls up to 2x slower.
        settle = input_sets.pop() if request.get("settle_seed") is not None else None
        generated = self.timer.clock_s()
        baseline = request.get("baseline", "eager")
        if baseline == "eager" and self.spec.device == "cuda" and request.get("graphs"):
            baseline = "graph"
        fn = self._timed_callable(baseline, input_sets[0])
        resident = reachable_tensors(self.prepared.model)
        # Room for this batch's outputs, which are kept for verification: twice the last
        # batch's per-call output bytes each (outputs may vary, and temporaries need room).
        reserve_heap(2 * len(input_sets) * self.prepared.output_bytes)
        times, outputs = [], []
        with torch.no_grad(), thread_count(request.get("threads")):
            if settle is not None and not isinstance(fn, GraphReplay):
                self.timer.time_call(fn, settle, resident)
                del settle
            for inputs in input_sets:
                if isinstance(fn, GraphReplay):
                    fn.load(inputs)
                    seconds, raw = self.timer.time_call(lambda: fn.replay(), [])
                    raw = _clone_outputs(raw)
                else:
                    seconds, raw = self.timer.time_call(fn, inputs, resident)
                times.append(seconds)
                outputs.append(list(raw) if isinstance(raw, (tuple, list)) else [raw])
        finished = self.timer.clock_s()
        self.prepared.output_bytes = max(
            (sum(o.untyped_storage().nbytes() for o in call if isinstance(o, torch.Tensor))
             for call in outputs), default=0)
        self.timed_outputs[str(request.get("baseline", "eager"))] = outputs
        if self.spec.role == "candidate":
            self.pending += _shared_storage_observations(outputs)
        return {
            "times": times,
            "generation_s": generated - started,
            "timed_wall_s": finished - generated,
            "flush": self.timer.flush_method,
            "l2_reset": self.timer.l2_reset,
            "threads": int(request.get("threads") or torch.get_num_threads()),
        }, []

    def op_fetch(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """The outputs of chosen calls of the last timed batch (of the named baseline)."""
        import torch

        batch = self.timed_outputs.get(str(request.get("baseline", "eager")), [])
        chosen = [int(i) for i in request["indices"]]
        sendable: list[Any] = []
        counts = []
        for index in chosen:
            outputs = [o for o in batch[index] if isinstance(o, torch.Tensor)]
            counts.append(len(outputs))
            sendable += [_plain_tensor(o) for o in outputs]
        return {"counts": counts, "described": [[_describe(o) for o in batch[i]]
                                                 for i in chosen]}, sendable

    def _timed_callable(self, baseline: str, example: list[Any]) -> Any:
        import torch

        from kernelproof.timing.call_timer import GraphReplay

        assert self.prepared is not None
        if baseline == "compile":
            if self.prepared.compiled is None:
                self.prepared.compiled = torch.compile(self.prepared.model)
            return self.prepared.compiled
        if baseline == "graph":
            if self.prepared.graph is None:
                self.prepared.graph = GraphReplay.capture(self.prepared.model, example)
            return self.prepared.graph
        return self.prepared.model

    def op_work(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """FLOPs and compulsory bytes of one reference call, for the speed-of-light floor."""
        from kernelproof.roofline.work import count_work
        from kernelproof.schema.variant import InputVariant, VariantKind
        from kernelproof.tasks.inputs import build_inputs

        assert self.prepared is not None, "work before prepare"
        variant = InputVariant(name="work", kind=VariantKind.SEED, seed=int(request["seed"]))
        inputs = build_inputs(self.prepared.task, variant, device=self.spec.device,
                              dtype=self.prepared.dtype)
        work = count_work(self.prepared.model, inputs)
        return {"flops": work.flops, "bytes": work.bytes, "reference_bytes": work.reference_bytes,
                "uncounted_ops": list(work.uncounted_ops)[:20]}, []

    def op_plan(self, request: Request, tensors: list[Any]) -> tuple[dict[str, Any], list[Any]]:
        """Estimate bytes and FLOPs of one call at the given knobs without allocating."""
        from kernelproof.tasks.planning import estimate_call

        knobs = {k: int(v) for k, v in request.get("knobs", {}).items()}
        task = self._task_module(knobs)
        return estimate_call(task, _dtype(self.spec.dtype)), []

    # -- helpers ---------------------------------------------------------------------------

    def _task_module(self, knobs: dict[str, int]) -> types.ModuleType:
        from kernelproof.tasks.module import module_from_source
        from kernelproof.tasks.source import parse_task

        key = repr(sorted(knobs.items()))
        if key not in self.render_cache:
            source = parse_task(self.spec.task_source, self.spec.task_path)
            name = f"kernelproof_task_{len(self.render_cache)}"
            self.render_cache[key] = module_from_source(
                source.render(knobs), self.spec.task_path, name
            )
        return self.render_cache[key]


def _start_audit(spec: WorkerSpec) -> Any:
    from kernelproof.checks.audit_hooks import AuditRecorder

    return AuditRecorder.install(spec.workdir, spec.candidate_path, spec.readable_paths)


def _dtype(name: str | None) -> Any:
    import torch

    return None if name is None else getattr(torch, name)


def _working_dtype(inputs: list[Any], dtype: Any) -> Any:
    import torch

    if dtype is not None:
        return dtype
    floating = [x.dtype for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    return floating[0] if floating else None


def _synchronize(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _state_tensors(model: Any) -> tuple[list[str], list[Any]]:
    import torch

    if not isinstance(model, torch.nn.Module):
        return [], []
    state = model.state_dict()
    names = [n for n, t in state.items() if isinstance(t, torch.Tensor)]
    return names, [state[n] for n in names]


def _load_matching(model: Any, reference_state: dict[str, Any]) -> dict[str, Any]:
    """Copy reference weights into the candidate wherever names and shapes match."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return {"copied": [], "unmatched_candidate": [], "unmatched_reference": list(reference_state)}
    own = model.state_dict()
    copied, mismatched = [], []
    with torch.no_grad():
        for name, tensor in own.items():
            source = reference_state.get(name)
            if source is not None and tuple(source.shape) == tuple(tensor.shape):
                tensor.copy_(source.to(device=tensor.device, dtype=tensor.dtype))
                copied.append(name)
            else:
                mismatched.append(name)
    return {
        "copied": copied,
        "unmatched_candidate": mismatched,
        "unmatched_reference": [n for n in reference_state if n not in own],
    }


def _apply_mode(model: Any, mode: str) -> None:
    """Put ``model`` in the mode the task asks for. ``as-built`` leaves every submodule as its
    constructor left it: KernelBench never calls ``.eval()``, so its BatchNorm tasks
    normalise with batch statistics (training mode, PyTorch's default)."""
    if mode == "eval":
        model.eval()
    elif mode == "train":
        model.train()


def _mode_of(model: Any) -> str:
    """``train``, ``eval`` or ``mixed``: the ``training`` flags of the model's submodules."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return "eval"
    flags = {module.training for module in model.modules()}
    return "mixed" if len(flags) > 1 else ("train" if flags == {True} else "eval")


def _oracle_model(model: Any) -> Any:
    """A float64 copy of ``model``: parameters and buffers, and every floating tensor a module
    keeps as a plain attribute, in a list or a dict (an RNN's ``h0``). ``None`` when the model
    cannot be copied: the reference then stands in for its oracle (see ``op_run``)."""
    import torch

    from kernelproof.tasks.inputs import to_float64

    if not isinstance(model, torch.nn.Module):
        return model
    try:
        oracle = copy.deepcopy(model).to(torch.float64)
    except Exception:  # noqa: BLE001 - the controller is told through oracle_fallback
        return None
    for module in oracle.modules():
        for name, value in list(vars(module).items()):
            if name not in ("_parameters", "_buffers", "_modules"):
                module.__dict__[name] = to_float64(value)
    return oracle


def _describe(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {
            "kind": "tensor",
            "type": f"{type(value).__module__}.{type(value).__qualname__}",
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "device": value.device.type,
        }
    return {"kind": type(value).__name__, "repr": repr(value)[:200]}


def _clone_outputs(raw: Any) -> Any:
    import torch

    if isinstance(raw, (tuple, list)):
        return [o.clone() if isinstance(o, torch.Tensor) else o for o in raw]
    return raw.clone() if isinstance(raw, torch.Tensor) else raw


def _shared_storage_observations(outputs: list[list[Any]]) -> list[dict[str, Any]]:
    """Timed calls on distinct inputs must not hand back the same buffer (a replayed cache)."""
    import torch

    from kernelproof.checks.probes import observation

    seen: dict[int, int] = {}
    for index, call_outputs in enumerate(outputs):
        for out in call_outputs:
            if isinstance(out, torch.Tensor) and out.numel() > 0:
                pointer = out.untyped_storage().data_ptr()
                if pointer in seen:
                    return [observation(
                        "output-aliases-earlier-output",
                        f"timed calls {seen[pointer]} and {index} returned the same buffer for "
                        "different inputs: the candidate replays a cached output",
                        calls=[seen[pointer], index],
                    )]
                seen[pointer] = index
    return []


def _plain_tensor(value: Any) -> Any:
    import torch

    if type(value) is not torch.Tensor:
        value = torch.Tensor.as_subclass(value, torch.Tensor)
    return value.detach()


def worker_main(conn: Connection, spec: WorkerSpec) -> None:
    """Entry point of a worker process (started by the forkserver)."""
    os.setsid()  # own process group: the controller kills the candidate's children with it
    os.makedirs(spec.workdir, exist_ok=True)
    log = os.open(spec.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.chdir(spec.workdir)
    from kernelproof.workers.allocator import retain_freed_memory

    retain_freed_memory()
    os.environ.update(spec.environment)
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

    from kernelproof.workers import sandbox, transport

    # Descriptors the forkserver hands every child: the resource tracker's pipe (whose
    # commands unlink named segments at exit) and the forkserver's liveness pipe. A candidate
    # needs neither.
    for holder, attribute in ((resource_tracker._resource_tracker, "_fd"),
                              (forkserver._forkserver, "_forkserver_alive_fd")):
        handle = getattr(holder, attribute, None)
        if isinstance(handle, int):
            try:
                os.close(handle)
            except OSError:
                pass
            setattr(holder, attribute, None)
    state = sandbox.enter(sandbox.SandboxPlan(**spec.sandbox))
    # Import paths the sandbox does not grant (a test runner's root, say) would only make every
    # later import fail an open there, which the audit hooks would then report.
    sys.path[:] = [p for p in sys.path if _listable(p)]
    sys.path_importer_cache.clear()
    transport.send(conn, {"hello": True, "sandbox": {"enforced": state.enforced,
                                                     "missing": state.missing}})
