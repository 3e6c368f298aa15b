"""The work a computation must do: FLOPs from its aten ops, compulsory bytes from its tensors.

FLOPs come from two sources that never overlap. ``torch.utils.flop_counter.FlopCounterMode``
counts the ops it has formulas for (matmul, convolution, attention). A second dispatch mode
counts the rest: one FLOP per output element of a pointwise op, one per input element of a
reduction or scan, and a small fixed cost per element for the fused normalisations
(softmax, layer norm). Views, copies, indexing and factory ops count zero. Ops that compute but
fit none of these are listed in :attr:`WorkCount.uncounted_ops`, so a report can say the count is
a lower bound.

Compulsory bytes are the traffic no implementation can avoid: every output written once, and
read once the part of each input that every correct algorithm must read, each distinct piece of
memory counted once. An input is read in full where an op consumes it densely (pointwise,
reduction, matmul, copy); where an op only selects from it (the table of an embedding or a
gather, the branches of a ``where``) it is not compulsory: a gather of a few rows of a big
table must not be held to reading the whole table. Views read nothing themselves; the op that
consumes a view reads the view's bytes. Intermediates are not compulsory (a fused kernel keeps
them on chip). :attr:`WorkCount.reference_bytes` keeps the reference's own traffic (all of its
inputs read once), reported as information.

Both counts are deliberately lower bounds: a floor computed from them must never exceed the time
an honest kernel can reach.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["WorkCount", "count_work"]


@dataclass(frozen=True)
class WorkCount:
    """FLOPs and compulsory bytes of one call, with the per-op FLOP breakdown."""

    flops: float
    """FLOPs of the reference's algorithm: information, not a bound on every algorithm (a
    candidate may honestly do less work, e.g. ``diag(a) @ B`` as a broadcast multiply)."""

    bytes: float
    """Compulsory bytes that bind every algorithm: ``compulsory_read`` plus every output's
    distinct bytes written once."""

    breakdown: dict[str, float] = field(default_factory=dict)
    """FLOPs per aten op packet, e.g. ``{"aten.mm": 2.1e9, "aten.relu": 1.0e6}``."""

    bytes_read: float = 0.0
    """Distinct bytes of the inputs, parameters and buffers."""

    bytes_written: float = 0.0
    """Distinct bytes of the outputs (an output that aliases an unmodified input counts zero),
    plus inputs the call modified in place."""

    uncounted_ops: tuple[str, ...] = ()
    """Ops that computed something no formula covers; when non-empty, ``flops`` is a lower bound."""

    compulsory_read: float = 0.0
    """Distinct bytes of the inputs, parameters and buffers consumed densely: what every correct
    algorithm must read."""

    @property
    def reference_bytes(self) -> float:
        """The reference's algorithm's traffic: every input read once, outputs written once."""
        return self.bytes_read + self.bytes_written


#: Ops that select from some of their tensor arguments (by position) instead of reading them
#: in full: only the elements picked are needed, so those arguments are not compulsory reads.
#: Their index or condition arguments are read in full.
SELECTIVE_ARGUMENTS: dict[str, tuple[int, ...]] = {
    "embedding": (0,),
    "embedding_bag": (0,),
    "_embedding_bag": (0,),
    "index": (0,),
    "_unsafe_index": (0,),
    "index_select": (0,),
    "gather": (0,),
    "take": (0,),
    "take_along_dim": (0,),
    "masked_select": (0,),
    "where": (1, 2),
}


#: FLOPs per input element of the fused normalisation ops, counting each elementary step once,
#: and the argument positions of their optional (weight, bias): each one present adds one FLOP per
#: element (a multiply, an add). Lower bounds: softmax is max, subtract, exp, sum, divide, and exp
#: alone costs more than one FLOP.
_NORMALISATIONS: dict[str, tuple[int, tuple[int, ...]]] = {
    "_softmax": (5, ()),
    "_log_softmax": (5, ()),
    "_safe_softmax": (5, ()),
    # mean, subtract, square-and-accumulate (2), scale.
    "native_layer_norm": (5, (2, 3)),
    "native_group_norm": (5, (1, 2)),
    # square-and-accumulate (2), scale.
    "_fused_rms_norm": (3, (2,)),
    # (x - mean) * invstd: the inference form; training also computes the statistics, which
    # this lower bound leaves out.
    "_native_batch_norm_legit_no_training": (2, (1, 2)),
    "_native_batch_norm_legit": (2, (1, 2)),
    "native_batch_norm": (2, (1, 2)),
}

#: Scans: one FLOP per input element, like a reduction (the tag system has no "scan" tag).
_SCANS = {"cumsum", "cumsum_", "cumprod", "cumprod_", "logcumsumexp", "cummax", "cummin"}

#: Ops that move, copy, convert, create or select data without arithmetic: zero FLOPs. ``clone``
#: carries the pointwise tag but is a copy. Views are recognised by their schema instead.
_DATA_MOVEMENT = {
    "clone",
    "copy",
    "copy_",
    "_to_copy",
    "to",
    "_copy_from",
    "_copy_from_and_resize",
    "contiguous",
    "detach",
    "detach_",
    "alias",
    "lift_fresh",
    "lift_fresh_copy",
    "_unsafe_view",
    "fill",
    "fill_",
    "zero",
    "zero_",
    "empty",
    "empty_like",
    "empty_strided",
    "new_empty",
    "new_empty_strided",
    "zeros",
    "zeros_like",
    "new_zeros",
    "ones",
    "ones_like",
    "new_ones",
    "full",
    "full_like",
    "new_full",
    "scalar_tensor",
    "arange",
    "linspace",
    "logspace",
    "rand",
    "rand_like",
    "randn",
    "randn_like",
    "randint",
    "randint_like",
    "randperm",
    "normal",
    "normal_",
    "uniform_",
    "bernoulli",
    "bernoulli_",
    "eye",
    "cat",
    "stack",
    "split",
    "split_with_sizes",
    "chunk",
    "unbind",
    "repeat",
    "repeat_interleave",
    "flip",
    "roll",
    "tril",
    "triu",
    "constant_pad_nd",
    "reflection_pad1d",
    "reflection_pad2d",
    "replication_pad1d",
    "replication_pad2d",
    "index",
    "index_select",
    "gather",
    "take",
    "masked_select",
    "nonzero",
    "slice_scatter",
    "select_scatter",
    "diagonal_scatter",
    "as_strided_scatter",
    "index_put",
    "index_put_",
    "scatter",
    "scatter_",
    "embedding",
    "resize_",
    "set_",
    "_local_scalar_dense",
    "item",
    "_assert_async",
    "_assert_tensor_metadata",
    "sort",
    "argsort",
    "topk",
    "kthvalue",
    "unique",
    "_unique2",
    "sym_size",
    "sym_stride",
    "sym_numel",
    "sym_storage_offset",
    "is_same_size",
    "equal",
}


def _op_name(func: Any) -> str:
    return f"{func.namespace}.{func.overloadpacket.__name__}"


def _functional_variant(func: Any) -> Any:
    """``aten.abs.default`` for ``aten.abs_.default``: in-place ops often lack the pointwise tag."""
    import torch

    base = func.overloadpacket.__name__
    if not base.endswith("_") or base.startswith("_"):
        return None
    namespace = getattr(torch.ops, func.namespace, None)
    packet = getattr(namespace, base[:-1], None)
    if packet is None:
        return None
    overload = func.__name__.rpartition(".")[2]
    return getattr(packet, overload, None) or getattr(packet, "default", None)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    """Every tensor in a value, looking through lists, tuples and dicts."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _numel(value: Any) -> int:
    return sum(t.numel() for t in _tensors(value))


class _ElementwiseCounter:
    """Counts pointwise, reduction, scan and normalisation FLOPs of the ops it is shown."""

    def __init__(self, skip: Iterable[Any]) -> None:
        self.skip = set(skip)
        self.flops: dict[str, float] = defaultdict(float)
        self.uncounted: dict[str, None] = {}

    def observe(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        import torch

        if func.overloadpacket in self.skip:
            return  # FlopCounterMode counts it
        name = func.overloadpacket.__name__
        if name in _DATA_MOVEMENT or func.is_view or not any(True for _ in _tensors(out)):
            return
        tags = set(func.tags)
        functional = _functional_variant(func)
        if functional is not None:
            tags |= set(functional.tags)
        if name in _NORMALISATIONS:
            elements = _numel(args[0])
            cost, affine = _NORMALISATIONS[name]
            cost += sum(1 for i in affine if i < len(args) and isinstance(args[i], torch.Tensor))
            self.flops[_op_name(func)] += cost * elements
        elif torch.Tag.reduction in tags or name in _SCANS:
            first = next(_tensors(args), None)
            self.flops[_op_name(func)] += first.numel() if first is not None else 0
        elif torch.Tag.pointwise in tags:
            # The result: for an ``out=`` op that is the out tensor, for an in-place op its self.
            self.flops[_op_name(func)] += _numel(out)
        elif any(True for _ in _tensors(args)):
            self.uncounted[_op_name(func)] = None


def _storage_key(tensor: torch.Tensor) -> tuple[Any, ...]:
    try:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
    except (RuntimeError, NotImplementedError):  # sparse and other storage-less layouts
        return ("object", id(tensor))
    if pointer == 0:
        # Meta tensors and empty storages have no address. ``untyped_storage()`` returns a fresh
        # wrapper each call, so the tensor itself is the identity: views of one meta tensor then
        # count separately, which only matters for the rare count done on meta inputs.
        return ("object", id(tensor))
    return (str(tensor.device), pointer)


def _distinct_bytes(tensor: torch.Tensor) -> int:
    """Bytes of distinct memory a tensor covers: broadcast (stride-0) dimensions count once."""
    elements = 1
    for size, stride in zip(tensor.shape, tensor.stride()):
        if stride != 0:
            elements *= size
    if tensor.numel() == 0:
        elements = 0
    return elements * tensor.element_size()


def _distinct_traffic(tensors: Iterable[torch.Tensor]) -> dict[tuple[Any, ...], int]:
    """Bytes per storage: identical views once, different views summed, capped at the storage."""
    seen: set[tuple[Any, ...]] = set()
    per_storage: dict[tuple[Any, ...], int] = defaultdict(int)
    capacity: dict[tuple[Any, ...], int] = {}
    for tensor in tensors:
        if tensor.is_sparse or tensor.layout != _strided():
            per_storage[("object", id(tensor))] += tensor.numel() * tensor.element_size()
            continue
        key = _storage_key(tensor)
        view = (key, tensor.storage_offset(), *tensor.shape, None, *tensor.stride(), tensor.dtype)
        if view in seen:
            continue
        seen.add(view)
        per_storage[key] += _distinct_bytes(tensor)
        capacity[key] = tensor.untyped_storage().nbytes()
    return {key: min(total, capacity.get(key, total)) for key, total in per_storage.items()}


def _dense_input_arguments(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], input_storages: set[tuple[Any, ...]]
) -> list[torch.Tensor]:
    """The tensor arguments of one op that lie in an input's memory and that the op reads in
    full (not a view, not an argument it only selects from)."""
    if func.is_view:
        return []
    skipped = SELECTIVE_ARGUMENTS.get(func.overloadpacket.__name__, ())
    dense = []
    for position, value in enumerate([*args, *kwargs.values()]):
        if position in skipped:
            continue
        for tensor in _tensors(value):
            if _storage_key(tensor) in input_storages:
                dense.append(tensor)
    return dense


def _strided() -> Any:
    import torch

    return torch.strided


def _version(tensor: torch.Tensor) -> int | None:
    try:
        return int(tensor._version)
    except (RuntimeError, AttributeError):  # inference tensors carry no version counter
        return None


#: Position of ``is_causal`` among the positional arguments of each attention op whose FLOP
#: formula is corrected for causal masking (from their aten schemas).
_CAUSAL_ARG_POSITION: dict[str, int] = {
    "_scaled_dot_product_flash_attention": 4,
    "_scaled_dot_product_flash_attention_for_cpu": 4,
    "_scaled_dot_product_efficient_attention": 6,
    "_scaled_dot_product_cudnn_attention": 6,
}


def _attention_flops(query_shape: Any, key_shape: Any, value_shape: Any) -> int:
    """Q K^T then P V for dense (batch..., L, E) shapes: 2 * batch * L * S * (E + Ev)."""
    *batch, length, embed = query_shape
    count = 1
    for dim in batch:
        count *= dim
    return 2 * count * length * key_shape[-2] * (embed + value_shape[-1])


def _causal_fraction(length: int, source: int) -> float:
    """Share of (query, key) pairs a top-left causal mask keeps: query i sees keys 0..i."""
    if length == 0 or source == 0:
        return 0.0
    if length <= source:
        kept = length * (length + 1) // 2
    else:
        kept = source * (source + 1) // 2 + (length - source) * source
    return kept / (length * source)


def _attention_formulas(registry: Mapping[Any, Any]) -> dict[Any, Callable[..., int]]:
    """FLOP formulas for the attention ops: torch's where it has one, scaled for causal masks.

    torch counts a causal attention as a full one, which would put the floor up to twice too
    high; a floor must stay a lower bound, so the count keeps only the unmasked pairs. The CPU
    flash kernel that SDPA dispatches to on CPU has no torch formula at all.
    """
    import torch

    formulas: dict[Any, Callable[..., int]] = {}
    for name, position in _CAUSAL_ARG_POSITION.items():
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:
            continue
        base = registry.get(packet)

        def formula(
            *args: Any,
            out_shape: Any = None,
            _base: Any = base,
            _pos: int = position,
            **kwargs: Any,
        ) -> int:
            query_shape, key_shape, value_shape = args[0], args[1], args[2]
            if _base is not None:
                flops = int(_base(*args, **kwargs))
            else:
                flops = _attention_flops(query_shape, key_shape, value_shape)
            causal = kwargs.get("is_causal", args[_pos] if len(args) > _pos else False)
            if causal is True and len(query_shape) == 4 and len(key_shape) == 4:
                flops = int(flops * _causal_fraction(query_shape[-2], key_shape[-2]))
            return flops

        formulas[packet] = formula
    return formulas


def count_work(
    fn: Callable[..., Any] | torch.nn.Module,
    inputs: Sequence[Any] | torch.Tensor,
    params: Iterable[torch.Tensor] = (),
) -> WorkCount:
    """Run ``fn(*inputs)`` once under FLOP counting and return its :class:`WorkCount`.

    ``fn`` may be an ``nn.Module`` (its parameters and buffers count as read) or any callable;
    ``inputs`` is the positional arguments (a lone tensor is taken as one argument); ``params``
    are further tensors the call reads that are not in ``inputs`` (weights a functional
    reference closes over). Outputs may be a tensor or any nesting of tuples, lists and dicts.

    The call runs under ``torch.no_grad`` on whatever device the inputs are on; pass meta tensors
    to count without computing, when every op involved supports them.
    """
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    args = (inputs,) if isinstance(inputs, torch.Tensor) else tuple(inputs)
    read = [*_tensors(args), *params]
    if isinstance(fn, torch.nn.Module):
        read += [*fn.parameters(), *fn.buffers()]
    versions = [(t, _version(t)) for t in read]

    torch_formulas = FlopCounterMode(display=False).flop_registry
    flop_counter = FlopCounterMode(
        display=False, custom_mapping=_attention_formulas(torch_formulas)
    )
    counter = _ElementwiseCounter(skip=flop_counter.flop_registry)

    input_storages = {_storage_key(t) for t in read}
    dense_reads: list[torch.Tensor] = []

    class _Observer(TorchDispatchMode):
        def __torch_dispatch__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            counter.observe(func, args, kwargs, out)
            dense_reads.extend(_dense_input_arguments(func, args, kwargs, input_storages))
            return out

    # The observer is entered first, so it sits below the flop counter and sees the ops the flop
    # counter lets through, after any decomposition it applies: both count the same op stream.
    with torch.no_grad(), _Observer(), flop_counter:
        outputs = fn(*args)

    breakdown: dict[str, float] = defaultdict(float)
    for packet, flops in flop_counter.get_flop_counts().get("Global", {}).items():
        breakdown[str(packet)] += flops
    for name, observed in counter.flops.items():
        breakdown[name] += observed

    reads = _distinct_traffic(read)
    modified = [t for t, before in versions if before is not None and _version(t) != before]
    written_tensors = [t for t in _tensors(outputs) if _storage_key(t) not in reads]
    writes = _distinct_traffic([*written_tensors, *modified])
    bytes_read = float(sum(reads.values()))
    bytes_written = float(sum(writes.values()))
    compulsory = float(
        sum(
            min(total, reads.get(key, total))
            for key, total in _distinct_traffic(dense_reads).items()
        )
    )
    # Every output is written, even one the reference returns as a view of an input: a
    # candidate's output may alias no input, so it must write it.
    output_bytes = float(sum(_distinct_traffic(_tensors(outputs)).values()))
    return WorkCount(
        flops=float(sum(breakdown.values())),
        bytes=compulsory + output_bytes,
        compulsory_read=compulsory,
        breakdown=dict(breakdown),
        bytes_read=bytes_read,
        bytes_written=bytes_written,
        uncounted_ops=tuple(counter.uncounted),
    )
