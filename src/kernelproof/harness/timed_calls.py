"""The timed-call half of the harness: ``time`` (one batch of timed calls on fresh inputs)
and ``fetch`` (the outputs of chosen calls of the last batch), and what checks them inside the
worker. A collaborator of :class:`~kernelproof.harness.worker.Harness`: it owns the timer and
the last batch's outputs, and reads the harness's prepared model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import torch

from kernelproof.checks.probes import observation
from kernelproof.harness.allocator import reserve_heap
from kernelproof.harness.input_pool import InputPool
from kernelproof.harness.tensors import describe, plain_tensor
from kernelproof.harness.threads import thread_count
from kernelproof.protocol.requests import FetchReply, FetchRequest, TimeReply, TimeRequest
from kernelproof.schema import FindingCheck
from kernelproof.schema.variant import InputVariant, VariantKind
from kernelproof.tasks.inputs import build_inputs
from kernelproof.timing.cache_eviction import reachable_tensors
from kernelproof.timing.call_timer import CallTimer, GraphReplay

#: The exact class every output must be, bound when the harness is imported (in the forkserver,
#: before any candidate): a candidate that rebinds ``torch.Tensor`` does not change it.
_PLAIN_TENSOR = torch.Tensor

#: Devices whose tensors hold no values yet: shapes only (meta) or a trace to run later (lazy).
UNMATERIALISED_DEVICES = frozenset({"meta", "lazy"})

if TYPE_CHECKING:
    from kernelproof.harness.prepared import Prepared
    from kernelproof.protocol.spec import WorkerSpec


class HarnessState(Protocol):
    """What the timed calls read of the harness they serve."""

    spec: WorkerSpec
    prepared: Prepared | None
    pending: list[dict[str, Any]]


@dataclass
class TimedCalls:
    """The ``time`` and ``fetch`` operations of one harness."""

    harness: HarnessState
    timer: Any = None
    timed_outputs: dict[str, list[list[Any]]] = field(default_factory=dict)
    """The outputs of the last timed batch, per baseline (eager, compile, graph)."""

    @property
    def spec(self) -> WorkerSpec:
        return self.harness.spec

    @property
    def prepared(self) -> Prepared | None:
        return self.harness.prepared

    def op_time(self, request: TimeRequest, tensors: list[Any]) -> tuple[TimeReply, list[Any]]:
        """Time one call per seed, each on freshly built inputs, and keep the outputs until
        the controller has picked which ones to verify. The whole batch (input generation and
        cache flushes included) runs at the timed thread count: the controller counts CPU
        time off the main thread, and pool threads building inputs would read as the
        candidate's own."""
        with thread_count(request.threads):
            return self._time_batch(request)

    def _time_batch(self, request: TimeRequest) -> tuple[TimeReply, list[Any]]:
        assert self.prepared is not None, "time before prepare"
        # The last batch's outputs were verified (or passed over) before this round began:
        # freed first, their memory holds this batch's, instead of the heap growing past both.
        self.timed_outputs.pop(request.baseline, None)
        hot = request.hot
        flush = request.cache_flush
        if self.timer is None or (self.timer.hot, self.timer.cache_flush) != (hot, flush):
            self.timer = CallTimer.for_device(self.spec.device, hot=hot, cache_flush=flush)
        started = self.timer.clock_s()
        inputs_for = self._inputs_source(request)
        settle = None
        if request.settle_seed is not None:
            # One untimed call on inputs of its own (never timed, so nothing it leaves behind
            # can be replayed): the other worker just ran on this core and evicted our code,
            # page tables and allocator state, which made each batch's first calls up to 2x
            # slower.
            settle = inputs_for(request.settle_seed, settle=True)
        first = inputs_for(int(request.seeds[0])) if request.seeds else []
        generation_s = self.timer.clock_s() - started
        baseline = request.baseline
        if baseline == "eager" and self.spec.device == "cuda" and request.graphs:
            baseline = "graph"
        fn = self._timed_callable(baseline, first)
        resident = reachable_tensors(self.prepared.model)
        # Room for this batch's outputs, which are kept for verification, at the last batch's
        # per-call output bytes, and for two more calls' worth of temporaries.
        reserve_heap((len(request.seeds) + 2) * self.prepared.output_bytes)
        times, outputs = [], []
        unmaterialised: dict[str, Any] | None = None
        with torch.no_grad():
            if settle is not None and not isinstance(fn, GraphReplay):
                self.timer.time_call(fn, settle, resident)
                del settle
            for position, seed in enumerate(request.seeds):
                if position:
                    built = self.timer.clock_s()
                    inputs = inputs_for(int(seed))
                    generation_s += self.timer.clock_s() - built
                else:
                    inputs = first
                if isinstance(fn, GraphReplay):
                    fn.load(inputs)
                    seconds, raw = self.timer.time_call(lambda: fn.replay(), [])
                    raw = clone_outputs(raw)
                else:
                    seconds, raw = self.timer.time_call(
                        fn, inputs, resident, cold=inputs_for.cold()
                    )
                    if request.pooled and self.spec.role == "reference":
                        # A pooled set changes before its next use: an output that is a view
                        # of an input would change with it.
                        raw = _owned(raw, inputs)
                times.append(seconds)
                outputs.append(list(raw) if isinstance(raw, (tuple, list)) else [raw])
                if unmaterialised is None:
                    unmaterialised = unmaterialised_output(outputs[-1], self.spec.device, position)
            del inputs, first
        if unmaterialised is not None and self.spec.role == "candidate":
            self.harness.pending.append(unmaterialised)
        finished = self.timer.clock_s()
        self.prepared.output_bytes = max(
            (
                sum(o.untyped_storage().nbytes() for o in call if isinstance(o, torch.Tensor))
                for call in outputs
            ),
            default=0,
        )
        self.timed_outputs[request.baseline] = outputs
        if self.spec.role == "candidate":
            self.harness.pending.extend(shared_storage_observations(outputs))
        return TimeReply(
            times=times,
            generation_s=generation_s,
            timed_wall_s=finished - started - generation_s,
            flush=self.timer.flush_method,
            l2_reset=self.timer.l2_reset,
            threads=int(request.threads or torch.get_num_threads()),
        ), []

    def _inputs_source(self, request: TimeRequest) -> TimedInputs:
        """Each timed call's inputs: built from the seed, or from the baseline's input pool
        when the request says so."""
        assert self.prepared is not None
        prepared = self.prepared

        def build(seed: int) -> list[Any]:
            return build_inputs(
                prepared.task,
                InputVariant(name="timing", kind=VariantKind.SEED, seed=seed),
                device=self.spec.device,
                dtype=prepared.dtype,
            )

        if not request.pooled:
            # Every set built before the first call, as the batch's calls then run back to
            # back (with warm caches, in hot mode).
            return TimedInputs(build, built={int(seed): build(int(seed)) for seed in request.seeds})
        # Cold calls take their pooled inputs written past the caches: the flush would evict
        # them again (see block_gather).
        return TimedInputs(
            build,
            pool=prepared.pools.setdefault(request.baseline, InputPool(build)),
            stream=not request.hot and request.cache_flush == "data",
        )

    def op_fetch(self, request: FetchRequest, tensors: list[Any]) -> tuple[FetchReply, list[Any]]:
        """The outputs of chosen calls of the last timed batch (of the named baseline), sent
        at one thread: the controller counts CPU time off the main thread during a fetch as
        the candidate's own work, and intra-op pool threads copying outputs would read so."""
        with thread_count(1):
            return self._fetch(request)

    def _fetch(self, request: FetchRequest) -> tuple[FetchReply, list[Any]]:
        batch = self.timed_outputs.get(request.baseline, [])
        chosen = request.indices
        sendable: list[Any] = []
        counts = []
        for index in chosen:
            outputs = [o for o in batch[index] if isinstance(o, torch.Tensor)]
            counts.append(len(outputs))
            sendable += [plain_tensor(o) for o in outputs]
        return FetchReply(
            counts=counts, described=[[describe(o) for o in batch[i]] for i in chosen]
        ), sendable

    def _timed_callable(self, baseline: str, example: list[Any]) -> Any:
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


@dataclass
class TimedInputs:
    """Where a batch's inputs come from: sets built ahead from the seeds, or an input pool."""

    build: Callable[[int], list[Any]]
    built: dict[int, list[Any]] = field(default_factory=dict)
    pool: Any = None
    stream: bool = False

    def __call__(self, seed: int, settle: bool = False) -> list[Any]:
        """The inputs of the call with ``seed``; ``settle``: of the batch's untimed first
        call, which never changes the pool."""
        if self.pool is None:
            return self.build(seed) if settle else self.built[seed]
        return (
            self.pool.settle_inputs(seed)
            if settle
            else self.pool.inputs_for(seed, stream=self.stream)
        )

    def cold(self) -> list[Any]:
        """The inputs of the last call that were written past the caches, if any."""
        return self.pool.streamed if self.pool is not None else []


def _owned(raw: Any, inputs: list[Any]) -> Any:
    """``raw`` with every output that shares storage with an input replaced by a copy."""
    pointers = {x.untyped_storage().data_ptr() for x in inputs if isinstance(x, torch.Tensor)}

    def own(o: Any) -> Any:
        shared = isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in pointers
        return o.clone() if shared else o

    if isinstance(raw, (tuple, list)):
        return [own(o) for o in raw]
    return own(raw)


def clone_outputs(raw: Any) -> Any:
    """A graph replay's outputs live in the graph's pool: copies, to keep past the next replay."""
    if isinstance(raw, (tuple, list)):
        return [o.clone() if isinstance(o, torch.Tensor) else o for o in raw]
    return raw.clone() if isinstance(raw, torch.Tensor) else raw


def unmaterialised_output(
    call_outputs: list[Any], device: str, position: int
) -> dict[str, Any] | None:
    """An observation when an output of a timed call is not a plain, materialised tensor the
    moment its clock stopped: a subclass (its methods may compute the rest when the harness
    touches it after the clock, and ``__torch_function__`` runs candidate code on every use),
    a tensor without real storage (meta, fake, lazy) or on another device. Checked with
    ``type()`` and attributes that no subclass method intercepts, on every timed call."""
    for index, out in enumerate(call_outputs):
        kind = type(out)
        if kind is not _PLAIN_TENSOR and isinstance(out, _PLAIN_TENSOR):
            name = f"{kind.__module__}.{kind.__qualname__}"
            return observation(
                FindingCheck.OUTPUT_TYPE,
                f"timed call {position} returned output {index} as a {name}, not exactly "
                "torch.Tensor: its values may be computed after the clock stopped, when the "
                "harness touches it",
                output=index,
                call=position,
                type=name,
            )
        if kind is _PLAIN_TENSOR and out.device.type in UNMATERIALISED_DEVICES:
            return observation(
                FindingCheck.OUTPUT_TYPE,
                f"timed call {position} returned output {index} on the {out.device.type!r} "
                f"device, which holds no values (the task runs on {device!r}): nothing was "
                "computed in the timed call",
                output=index,
                call=position,
                device=out.device.type,
            )
    return None


def shared_storage_observations(outputs: list[list[Any]]) -> list[dict[str, Any]]:
    """Timed calls on distinct inputs must not hand back the same buffer (a replayed cache)."""
    seen: dict[int, int] = {}
    for index, call_outputs in enumerate(outputs):
        for out in call_outputs:
            if isinstance(out, torch.Tensor) and out.numel() > 0:
                pointer = out.untyped_storage().data_ptr()
                if pointer in seen:
                    return [
                        observation(
                            "output-aliases-earlier-output",
                            f"timed calls {seen[pointer]} and {index} returned the same buffer for "
                            "different inputs: the candidate replays a cached output",
                            calls=[seen[pointer], index],
                        )
                    ]
                seen[pointer] = index
    return []
