"""Integrity probes that run around every candidate call, inside the candidate's worker.

A probe only ever *adds* evidence: the worker is untrusted, so a missing observation proves
nothing, while a present one is hard to fake by accident. The controller decides severities
(see :mod:`kernelproof.checks.observations`); here we only record what was seen.
"""

from __future__ import annotations

import builtins
import operator
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelproof.schema.checks import FindingCheck

#: Bounds of the wait before re-reading an output. A side thread or stream that finishes the
#: output after the call returned (HACKS row 6) needs about as long as the honest computation,
#: so the controller asks for twice the reference's call time, within these bounds.
MIN_STABILITY_DELAY_S = 0.002
MAX_STABILITY_DELAY_S = 0.25

#: The longest wait when the outputs were sent before it (``RunRequest.defer_probes``). The
#: controller then judges the values as the call left them, so work that lands after the send
#: makes the cell wrong whatever the probe sees, and work that landed before it changed the
#: output since the snapshot. The wait past the send only lets a side thread write something
#: the probe can name (the minimum above), and a longer one (a denormal-slowed reference asked
#: for 0.69 s on one cell) would only hold the next request back.
MAX_DEFERRED_DELAY_S = 0.01

#: Earlier outputs kept alive so that a new output aliasing one of them can be detected
#: (HACKS rows 9 and 16). Keeping them alive also stops their memory being reused legitimately.
REMEMBERED_OUTPUTS = 4

#: Poison buffer written and freed before each call, so that an uninitialised allocation that
#: reuses freed memory holds NaN rather than something plausible (HACKS row 4).
POISON_BYTES = 64 << 20


Observation = dict[str, Any]


def observation(check: FindingCheck | str, message: str, **evidence: Any) -> Observation:
    """A probe's report as it travels to the controller, which decides its severity."""
    return {"check": str(check), "message": message, "evidence": evidence}


def bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Exact equality that treats NaN payloads as equal to themselves."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        width = _SAME_WIDTH.get(a.element_size())
        if width is None:
            return bool(torch.equal(a, b))
        return bool(torch.equal(a.contiguous().view(width), b.contiguous().view(width)))
    return bool(torch.equal(a, b))


def _bits(t: torch.Tensor) -> torch.Tensor:
    """A floating tensor's bits as integers of its width (the same memory).

    Snapshots are kept this way: they live on in the candidate's process while its next call
    runs (:meth:`Settling.outputs_changed`), where a candidate that searches the heap for a
    tensor that looks like its answer (HACKS row 14) found a float copy of its own last
    output: it learned nothing new from it, but returned a stale answer."""
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        return t
    width = _SAME_WIDTH.get(t.element_size())
    return t.view(width) if width is not None else t


#: Integer dtypes by element size, to compare floating tensors bit for bit.
_SAME_WIDTH = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    start = storage.data_ptr()
    return start, start + storage.nbytes()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


def _tensors(values: Iterable[Any]) -> list[torch.Tensor]:
    return [v for v in values if isinstance(v, torch.Tensor)]


#: Namespaces whose public callables a candidate must leave alone (DESIGN.md, tampering scope).
def _watched_namespaces() -> dict[str, Any]:
    import torch.nn.functional

    spaces: dict[str, Any] = {
        "torch": torch,
        "torch.nn.functional": torch.nn.functional,
        "torch.Tensor": torch.Tensor,
        "time": time,
        "builtins": builtins,
        "threading": threading,
    }
    # Watched even without a GPU: patching them is evidence of intent either way.
    spaces["torch.cuda"] = torch.cuda
    spaces["torch.cuda.Event"] = torch.cuda.Event
    return spaces


@dataclass
class CallableSnapshot:
    """Identity of every public callable in the watched namespaces, taken before the import."""

    entries: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Callable[..., Any]] = field(default_factory=dict)
    untouched: list[tuple[Any, list[Any], list[Any]]] = field(default_factory=list)
    """Each namespace's dict, its keys and its values when last found unchanged: a diff that
    finds every key and value the very same object is skipped (this runs after every reply;
    the full diff walks thousands of callables, about a millisecond)."""

    @classmethod
    def take(cls, extra: dict[str, Any] | None = None) -> CallableSnapshot:
        entries: dict[str, int] = {}
        for prefix, space in _watched_namespaces().items():
            for name, value in _public_callables(space):
                entries[f"{prefix}.{name}"] = id(value)
        return cls(entries=entries, extra=dict(extra or {}), untouched=_namespace_states())

    def changed(self) -> list[str]:
        """Names whose object is no longer the one snapshotted (replaced or deleted)."""
        changed = [name for name, original in self.extra.items() if _resolve(name) is not original]
        if self.untouched and all(_same_state(state) for state in self.untouched):
            return changed
        now: dict[str, int] = {}
        for prefix, space in _watched_namespaces().items():
            for name, value in _public_callables(space):
                now[f"{prefix}.{name}"] = id(value)
        replaced = sorted(name for name, ident in self.entries.items() if now.get(name) != ident)
        # A method set on torch.Tensor that it only inherited until now (``add`` lives on
        # the C base class) shadows it for every tensor: new there is replaced.
        replaced += sorted(
            name for name in now if name.startswith("torch.Tensor.") and name not in self.entries
        )
        if not replaced:
            # Something else in a namespace changed (a private flag, a lazy submodule): the
            # next diff starts from here.
            self.untouched = _namespace_states()
        return replaced + changed


def _namespace_states() -> list[tuple[Any, list[Any], list[Any]]]:
    return [
        (vars(space), list(vars(space)), list(vars(space).values()))
        for space in _watched_namespaces().values()
    ]


def _same_state(state: tuple[Any, list[Any], list[Any]]) -> bool:
    """Whether a namespace dict still holds the very same keys and values, in order. Compared
    by identity in C (``operator.is_``): no ``__eq__`` of a candidate's object runs."""
    namespace, keys, values = state
    return (
        len(namespace) == len(keys)
        and all(map(operator.is_, namespace, keys))
        and all(map(operator.is_, namespace.values(), values))
    )


def _resolve(dotted: str) -> Any:
    """The object a dotted name points to now: the longest loaded module prefix, then
    attributes (``pkg.module.Class.method``). None when it no longer resolves."""
    import sys

    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        target = sys.modules.get(".".join(parts[:cut]))
        if target is not None:
            for attr in parts[cut:]:
                target = (
                    target.__dict__.get(attr)
                    if isinstance(target, type)
                    else getattr(target, attr, None)
                )
            return target
    return None


def _public_callables(space: Any) -> Iterable[tuple[str, Any]]:
    # The namespace's own dict, not dir()/getattr: every replacement of a public name lands
    # there, reading it triggers no lazy imports or deprecation warnings, and it is ~5x faster
    # (this runs after every worker reply).
    for name, value in list(vars(space).items()):
        if name.startswith("_") and name not in _WATCHED_DUNDERS:
            continue
        if callable(value) or isinstance(value, (staticmethod, classmethod, property)):
            yield name, value


#: Dunders of ``torch.Tensor`` a lazy-output or fake-comparison hack would override.
_WATCHED_DUNDERS = frozenset(
    {"__eq__", "__ne__", "__sub__", "__abs__", "__getitem__", "__torch_function__", "__import__"}
)


@dataclass
class CallProbe:
    """Checks around one candidate call: inputs intact, output honest and stable, no threads."""

    remembered: list[tuple[int, int, torch.Tensor]] = field(default_factory=list)

    def before(self, inputs: list[Any]) -> _CallState:
        poison_memory(inputs)
        pristine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        return _CallState(pristine=pristine, threads=_live_threads())

    def after(
        self, state: _CallState, inputs: list[Any], outputs: list[Any], stability_delay_s: float
    ) -> list[Observation]:
        found, settling = self.after_call(state, inputs, outputs, stability_delay_s)
        return found + settling.settle()

    def after_call(
        self,
        state: _CallState,
        inputs: list[Any],
        outputs: list[Any],
        stability_delay_s: float,
        deferred: bool = False,
    ) -> tuple[list[Observation], Settling]:
        """The checks that read the call as it returned, and the ones that must wait (output
        stability, threads left running): ``Settling.settle`` runs those, at once or after
        the reply is sent (the wait then overlaps the controller's comparison)."""
        # Snapshot before anything synchronizes: on CUDA, work a candidate left on a side
        # stream is still running, and the later comparison sees it land.
        snapshots = [
            _bits(out.clone()) if isinstance(out, torch.Tensor) else None for out in outputs
        ]
        found = self._check_inputs(state, inputs) + self._check_outputs(inputs, outputs)
        delay = min(
            max(stability_delay_s, MIN_STABILITY_DELAY_S),
            MAX_DEFERRED_DELAY_S if deferred else MAX_STABILITY_DELAY_S,
        )
        return found, Settling(
            snapshots=snapshots,
            outputs=list(outputs),
            threads=state.threads,
            deadline=time.monotonic() + delay,
            delay_s=delay,
        )

    def _check_inputs(self, state: _CallState, inputs: list[Any]) -> list[Observation]:
        found = []
        for index, (before, after) in enumerate(zip(state.pristine, inputs)):
            if isinstance(before, torch.Tensor) and isinstance(after, torch.Tensor):
                if not bitwise_equal(before, after):
                    changed = int((before != after).sum()) if before.shape == after.shape else -1
                    found.append(
                        observation(
                            FindingCheck.INPUT_MUTATION,
                            f"the candidate modified input {index} in place "
                            f"({changed} of {before.numel()} elements changed)",
                            input=index,
                            changed_elements=changed,
                        )
                    )
        return found

    def _check_outputs(self, inputs: list[Any], outputs: list[Any]) -> list[Observation]:
        found = []
        input_spans = [_storage_span(x) for x in _tensors(inputs)]
        for index, out in enumerate(outputs):
            if type(out) is not torch.Tensor:
                found.append(
                    observation(
                        FindingCheck.OUTPUT_TYPE,
                        f"output {index} is a {type(out).__module__}.{type(out).__qualname__}, "
                        "not exactly torch.Tensor: its values may be computed lazily, outside "
                        "the timed call",
                        output=index,
                        type=f"{type(out).__module__}.{type(out).__qualname__}",
                    )
                )
                continue
            span = _storage_span(out)
            if any(_overlaps(span, other) for other in input_spans):
                found.append(
                    observation(
                        FindingCheck.OUTPUT_ALIASES_INPUT,
                        f"output {index} shares memory with an input",
                        output=index,
                    )
                )
            elif any(_overlaps(span, (s, e)) for s, e, _ in self.remembered):
                found.append(
                    observation(
                        FindingCheck.OUTPUT_ALIASES_EARLIER_OUTPUT,
                        f"output {index} shares memory with an output of an earlier call: the "
                        "candidate returns a cached or reused buffer",
                        output=index,
                    )
                )
        for out in _tensors(outputs):
            if type(out) is torch.Tensor:
                start, end = _storage_span(out)
                self.remembered.append((start, end, out))
        del self.remembered[:-REMEMBERED_OUTPUTS]
        return found


@dataclass
class Settling:
    """The checks of one call that wait until ``deadline``: a side thread or stream that
    finishes the output after the call returned (HACKS row 6) needs about as long as the
    honest computation."""

    snapshots: list[Any]
    outputs: list[Any]
    threads: set[str]
    deadline: float
    delay_s: float

    def settle(self) -> list[Observation]:
        return self.outputs_changed() + self.threads_left()

    def outputs_changed(self) -> list[Observation]:
        """Wait until the deadline (what is left of it), then compare each output with its
        snapshot."""
        time.sleep(max(0.0, self.deadline - time.monotonic()))
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        found = []
        for index, (snapshot, out) in enumerate(zip(self.snapshots, self.outputs)):
            if snapshot is not None and not bitwise_equal(snapshot, _bits(out)):
                found.append(
                    observation(
                        FindingCheck.OUTPUT_UNSTABLE,
                        f"output {index} changed after the call returned: work continues on a "
                        "side thread or stream that the timer does not see",
                        output=index,
                        delay_s=self.delay_s,
                    )
                )
        return found

    def threads_left(self) -> list[Observation]:
        """Python threads started since the call began that are still alive."""
        found = []
        new = sorted(_live_threads() - self.threads)
        if new:
            found.append(
                observation(
                    FindingCheck.NEW_THREADS,
                    f"{len(new)} Python thread(s) still alive after the call: {', '.join(new[:5])}",
                    threads=new[:20],
                )
            )
        return found


@dataclass
class _CallState:
    pristine: list[Any]
    threads: set[str]


def _live_threads() -> set[str]:
    return {f"{t.name}#{t.ident}" for t in threading.enumerate() if t.is_alive()}


def poison_memory(inputs: list[Any]) -> None:
    """Fill and free memory so that reused allocations hold NaN.

    On CUDA this poisons the caching allocator's free blocks, each one: a single allocation of
    all that is cached would get a fresh segment of its own (free blocks of separate segments
    never merge) and leave every block an output can reuse as it was. On the CPU, glibc hands
    large allocations back to the OS (which zeroes them), so poisoning matters only for small
    ones; a modest buffer covers those.
    """
    device = next(
        (x.device for x in inputs if isinstance(x, torch.Tensor) and x.device.type == "cuda"),
        None,
    )
    if device is not None:
        held = [
            torch.empty(size // 4, dtype=torch.float32, device=device).fill_(float("nan"))
            for size in free_block_requests(torch.cuda.memory_snapshot(), device.index or 0)
        ]
        del held
        return
    small = torch.empty(POISON_BYTES // 4 // 64, dtype=torch.float32)
    small.fill_(float("nan"))
    del small


#: The caching allocator serves requests of up to 1 MiB from its small pool (2 MiB segments);
#: a free block there is taken by requests of at most this size.
SMALL_POOL_REQUEST = 1 << 20


def free_block_requests(snapshot: list[dict[str, Any]], device: int) -> list[int]:
    """Request sizes that, held together, take every free block of ``device``'s caching
    allocator (``torch.cuda.memory_snapshot()``). Largest first: the allocator fits each
    request into the smallest free block that holds it, so an exact size takes its own block.
    A small-pool block is taken in pieces of at most :data:`SMALL_POOL_REQUEST` (a larger
    request would go to the large pool and miss it)."""
    sizes: list[int] = []
    for segment in snapshot:
        if segment.get("device") != device:
            continue
        small = segment.get("segment_type") == "small"
        for block in segment.get("blocks", []):
            if block.get("state") != "inactive":
                continue
            size = int(block["size"])
            while small and size > SMALL_POOL_REQUEST:
                sizes.append(SMALL_POOL_REQUEST)
                size -= SMALL_POOL_REQUEST
            if size >= 4:
                sizes.append(size - size % 4)
    return sorted(sizes, reverse=True)
