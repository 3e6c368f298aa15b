"""The messages between the controller and a worker: one request model per operation the
harness serves, and one model for the ``data`` of each operation's reply.

On the wire nothing changes: a request travels as a JSON header (the model's fields, ``op``
naming the operation) plus raw tensors (:mod:`kernelproof.protocol.transport`); a reply is a
:class:`~kernelproof.protocol.messages.WorkerReply` whose ``data`` is one of the reply models
below, dumped. The harness parses each header with :data:`REQUEST` (discriminated by ``op``);
the controller reads a reply's ``data`` as the request's :attr:`Request.reply_model`
(:attr:`kernelproof.workers.process.Response.data`).

The candidate worker is untrusted: its replies are validated here, and every field has the
default the controller assumed when the key was missing.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from kernelproof.protocol.messages import Phase
from kernelproof.schema.variant import InputVariant

# -- requests ----------------------------------------------------------------------------------


#: The reply model of a request's operation.
ReplyT = TypeVar("ReplyT", bound="ReplyData")


class Request(BaseModel, Generic[ReplyT]):
    """Fields every request carries. Each request names its reply model (the type parameter,
    and :attr:`reply_model` at run time): the worker pair returns that model, typed, so no
    call site picks a reply model by hand."""

    model_config = ConfigDict(frozen=True)

    reply_model: ClassVar[type[ReplyData]]
    """The model of this operation's reply ``data`` (set below, with the replies)."""

    op: str
    """The operation, a literal in each request (the discriminator of :data:`WorkerRequest`)."""

    phase: Phase = Phase.CALL
    """Where in the worker's life the request belongs; the reply's phase (and a failure's)."""

    watched: ClassVar[bool] = True
    """Whether the controller's stack samplers run while the worker answers (see
    ``Freezer.thaw``)."""

    def header(self) -> dict[str, Any]:
        """The JSON header sent on the wire."""
        return self.model_dump(mode="json")


class BuildRequest(Request["BuildReply"]):
    """Import the candidate (its C++/numba/Triton build happens here). A no-op for the
    reference worker."""

    op: Literal["build"] = "build"
    phase: Phase = Phase.BUILD
    """Always ``build``: a failure here is a build failure."""


class PrepareRequest(Request["PrepareReply"]):
    """Render the task at ``knobs`` and construct the model (the reference's ``Model``, the
    candidate's ``ModelNew``) from the task's init inputs. The candidate's request comes with
    the reference's state tensors, in the order of ``state_names``."""

    op: Literal["prepare"] = "prepare"
    phase: Phase = Phase.PREPARE
    """Always ``prepare``: a failure here is a constructor failure."""

    knobs: dict[str, int] = Field(default_factory=dict)
    """The task's knobs (size constants) to render the task with."""

    init_seed: int
    """Seed set before ``get_init_inputs()`` and again before the constructor, so that random
    initialisation agrees between the two workers."""

    state_names: list[str] | None = None
    """Candidate only: the names of the reference's state tensors sent with the request; the
    candidate's weights of the same name and shape are overwritten with them."""


class RunRequest(Request["RunReply"]):
    """Build one input variant's inputs, call the model once (with the integrity probes and the
    op audit in the candidate worker) and return its outputs."""

    op: Literal["run"] = "run"

    variant: InputVariant
    """The inputs to build: seed, shape and value transforms."""

    oracle: bool = True
    """Reference only: also run the float64 oracle on the same inputs and return its outputs
    after the model's."""

    oracle_fallback: bool = False
    """Reference only: when the float64 oracle fails, return the reference's own outputs as the
    oracle and say why in the reply's ``oracle_fallback``, instead of failing the request."""

    return_inputs: bool = False
    """Reference only: also return the input tensors, after the outputs (and the oracle's)."""

    forward_bound: bool = False
    """Reference only, with ``oracle``: also bound each oracle output's forward error
    (:mod:`kernelproof.checks.forward_error`) and return, after everything else, two tensors
    per oracle output (its systematic part and its magnitude; empty when unbounded)."""

    record_ops: bool = True
    """Record the dispatcher ops and custom kernels the call ran (with probes on only)."""

    stability_delay_s: float = 0.05
    """Candidate only: how long the stability probe waits before reading the outputs again."""

    defer_probes: bool = False
    """Candidate only, on the CPU: send the outputs as the call left them and run the
    stability wait and the tamper diff after the reply is sent, while the controller compares.
    Their observations (each naming its variant) come with the next reply; a
    :class:`SettleRequest` collects the last ones."""

    threads: int | None = None
    """Run the call with torch's and numba's pools at this many threads; None: the worker's
    own count (the machine's, for correctness)."""

    given: list[dict[str, Any]] | None = None
    """Saved arguments to call with instead of building the variant's inputs (``verify
    --inputs``): per positional argument ``{"tensor": i, "strides": [...]}`` (the i-th tensor
    sent with the request, laid out with these strides) or ``{"value": v}``
    (:func:`kernelproof.tasks.saved_inputs.given_slots`)."""


class TimeRequest(Request["TimeReply"]):
    """Time one call per seed, each on freshly built inputs (and, when cold, after a cache
    flush), and keep the outputs until the controller fetches the ones it verifies."""

    op: Literal["time"] = "time"

    seeds: list[int]
    """One timed call per seed, on the inputs built from it."""

    settle_seed: int | None = None
    """Seed of one untimed call made first on inputs of its own (the other worker has just
    evicted this one's code and page tables); None for no such call."""

    baseline: str = "eager"
    """What is timed: ``eager`` (the model), ``compile`` (``torch.compile`` of it) or
    ``graph`` (a CUDA graph replay); the outputs are kept under this name."""

    hot: bool = False
    """Time with warm caches (no flush between calls)."""

    pooled: bool = False
    """Take each call's inputs from the baseline's input pool, changed by the call's seed
    (:mod:`kernelproof.harness.input_pool`), instead of building them from the seed."""

    cache_flush: str = "data"
    """How caches are flushed between cold calls: ``data`` (the call's own lines) or ``full``
    (a buffer of twice the cache)."""

    graphs: bool = False
    """On CUDA, time an ``eager`` baseline as a CUDA graph replay."""

    threads: int | None = None
    """Time the batch with torch's and numba's pools at this many threads (both sides at the
    same, reported count); None: the worker's own count."""


class FetchRequest(Request["FetchReply"]):
    """Send the outputs of chosen calls of the last timed batch."""

    op: Literal["fetch"] = "fetch"

    #: A fetch runs none of the candidate's code, and the CPU its threads take meanwhile is
    #: judged as work done while fetched: samples would add their pauses' kernel time to it.
    watched: ClassVar[bool] = False

    indices: list[int]
    """Positions, in the last batch, of the calls whose outputs to send."""

    baseline: str = "eager"
    """The baseline whose last batch to read (see :attr:`TimeRequest.baseline`)."""


class WorkRequest(Request["WorkReply"]):
    """Count the FLOPs and compulsory bytes of one reference call (the speed-of-light floor)."""

    op: Literal["work"] = "work"

    seed: int
    """Seed of the inputs the call is counted on."""


class PlanRequest(Request["PlanReply"]):
    """Estimate the bytes and FLOPs of one call at ``knobs`` on the meta device, allocating
    nothing."""

    op: Literal["plan"] = "plan"
    phase: Phase = Phase.PREPARE
    """``prepare``: planning renders and constructs the task."""

    knobs: dict[str, int] = Field(default_factory=dict)
    """The knobs to render the task with."""


class SettleRequest(Request["ReplyData"]):
    """Answer with the observations of the probes deferred after earlier replies
    (:attr:`RunRequest.defer_probes`), once they have run."""

    op: Literal["settle"] = "settle"


class ExitRequest(Request["ReplyData"]):
    """Stop serving: the worker returns from its loop and exits. Never answered."""

    op: Literal["exit"] = "exit"


WorkerRequest = Annotated[
    BuildRequest
    | PrepareRequest
    | RunRequest
    | TimeRequest
    | FetchRequest
    | WorkRequest
    | PlanRequest
    | SettleRequest
    | ExitRequest,
    Field(discriminator="op"),
]
"""Any request a worker serves, told apart by ``op``."""

REQUEST: TypeAdapter[WorkerRequest] = TypeAdapter(WorkerRequest)
"""Parses a received header into its request model."""


def parse_request(header: dict[str, Any]) -> WorkerRequest:
    """The request model of a received header; raises ``pydantic.ValidationError`` for an
    unknown ``op`` or a malformed field."""
    return REQUEST.validate_python(header)


# -- replies -----------------------------------------------------------------------------------


class ReplyData(BaseModel):
    """The ``data`` of a successful reply. Unknown keys are kept (and ignored)."""

    model_config = ConfigDict(extra="allow")

    def dump(self) -> dict[str, Any]:
        """The dict sent as the reply's ``data``: fields left at None are not sent."""
        return self.model_dump(exclude_none=True)


class BuildReply(ReplyData):
    """The answer to :class:`BuildRequest`."""

    import_s: float | None = None
    """Seconds the candidate's import (its build) took; None from the reference worker."""


class PrepareReply(ReplyData):
    """The answer to :class:`PrepareRequest`. The reference's reply carries its state tensors
    (in the order of ``state_names``)."""

    state_names: list[str] = Field(default_factory=list)
    """Reference only: names of the state tensors sent with the reply."""

    module_mode: str | None = None
    """Reference only: ``train``, ``eval`` or ``mixed``, from its submodules' ``training``
    flags after construction."""

    weights: dict[str, Any] = Field(default_factory=dict)
    """Candidate only: which weights were copied from the reference (``copied``), and which
    names matched nothing (``unmatched_candidate``, ``unmatched_reference``)."""


class RunReply(ReplyData):
    """The answer to :class:`RunRequest`. Its tensors: the outputs, then the oracle's outputs
    (``oracle_count``), then the inputs (``input_count``)."""

    call_s: float | None = None
    """Wall seconds of the call, measured in the worker."""

    ops: dict[str, Any] | None = None
    """The op audit's summary of the call, when it was recorded."""

    outputs: list[dict[str, Any]] = Field(default_factory=list)
    """One description per output (``kind``; for a tensor also ``type``, ``dtype``, ``shape``
    and ``device``; otherwise its ``repr``): only ``kind == "tensor"`` outputs are sent."""

    oracle_fallback: str | None = None
    """Why the float64 oracle failed, when the reference stood in for it."""

    oracle_count: int = 0
    """How many oracle outputs follow the outputs."""

    input_count: int = 0
    """How many input tensors follow (when ``return_inputs`` was asked)."""

    bound_depths: list[int | None] = Field(default_factory=list)
    """Per oracle output, the rounding depth of its forward error bound (None: unbounded),
    when ``forward_bound`` was asked; its two tensors come last."""

    cuda_memory: dict[str, int] | None = None
    """On CUDA, the worker's device memory after the call: ``allocated`` and ``reserved``
    (``torch.cuda.memory_allocated`` / ``memory_reserved``) and the device's ``total``, in
    bytes; what the e2e soak's growth check reads (another process's device memory is not in
    /proc). The worker's own word, so evidence only. None elsewhere."""

    signature: dict[str, Any] | None = None
    """Reference only: the :class:`~kernelproof.schema.envelope.CallSignature` of the call's
    inputs (dumped), for the report's envelope. The candidate's is never asked for: its
    process is untrusted, and it built the same inputs from the same seed."""

    @field_validator("ops", mode="before")
    @classmethod
    def _ops_or_none(cls, value: Any) -> Any:
        # A worker's summary that is not a mapping is no summary (as the matrix always read it).
        return value if isinstance(value, dict) else None


class TimeReply(ReplyData):
    """The answer to :class:`TimeRequest`, all times from the worker's own clock."""

    times: list[float] = Field(default_factory=list)
    """Seconds of each timed call, in the order of the seeds."""

    generation_s: float = 0.0
    """Seconds spent building the batch's inputs."""

    timed_wall_s: float = 0.0
    """Wall seconds from the end of input generation to the end of the last call (flushes
    and the untimed settling call included)."""

    flush: str | None = None
    """The cache flush that was used (the timer's ``flush_method``)."""

    l2_reset: bool | None = None
    """Whether the persisting-L2 limit was reset (CUDA)."""

    threads: int | None = None
    """The thread count the batch ran at: the request's, else ``torch.get_num_threads()``."""


class FetchReply(ReplyData):
    """The answer to :class:`FetchRequest`; its tensors are the chosen calls' tensor outputs,
    call after call."""

    counts: list[int] = Field(default_factory=list)
    """How many tensors each chosen call contributed."""

    described: list[list[dict[str, Any]]] = Field(default_factory=list)
    """Each chosen call's outputs, described as in :attr:`RunReply.outputs`."""


class WorkReply(ReplyData):
    """The answer to :class:`WorkRequest`."""

    flops: float = 0.0
    """Floating-point operations of one reference call."""

    bytes: float = 0.0
    """Compulsory bytes of one call: outputs written and inputs the reference reads densely."""

    reference_bytes: float = 0.0
    """All bytes of the reference's inputs (its algorithm's traffic, reported, not judged)."""

    uncounted_ops: list[str] = Field(default_factory=list)
    """Ops whose FLOPs could not be counted (at most 20)."""


class PlanReply(ReplyData):
    """The answer to :class:`PlanRequest` (from :func:`kernelproof.tasks.planning.estimate_call`)."""

    ok: bool = False
    """Whether the task could run on the meta device; the sizes below are absent otherwise."""

    error: str | None = None
    """Why it could not."""

    bytes: float | None = None
    """Bytes of inputs, parameters and outputs of one call."""

    input_bytes: float | None = None
    """Bytes of the inputs."""

    output_elements: float | None = None
    """Elements of the tensor outputs."""

    largest_tensor_elements: float | None = None
    """Elements of the largest single input or output tensor: past 2**31, a 32-bit index
    into it wraps."""

    flops: float | None = None
    """Matmul and convolution FLOPs of one call."""

    device_free_bytes: float | None = None
    """Free memory of the worker's CUDA device (``cudaMemGetInfo``), on a GPU only: the budget
    of the variants sized past 32-bit indexing."""


#: Each request's reply model: one typed exchange per operation.
EXCHANGES: dict[type[Request[Any]], type[ReplyData]] = {
    BuildRequest: BuildReply,
    PrepareRequest: PrepareReply,
    RunRequest: RunReply,
    TimeRequest: TimeReply,
    FetchRequest: FetchReply,
    WorkRequest: WorkReply,
    PlanRequest: PlanReply,
    SettleRequest: ReplyData,
    ExitRequest: ReplyData,
}
for _request, _reply in EXCHANGES.items():
    _request.reply_model = _reply
    _request.model_rebuild()
