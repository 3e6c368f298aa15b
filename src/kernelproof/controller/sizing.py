"""Fitting a task's default shape to this machine's memory and time budget."""

from __future__ import annotations

import math
from dataclasses import dataclass

from kernelproof.config import Settings
from kernelproof.protocol.requests import PlanReply, PlanRequest
from kernelproof.tasks.knob_roles import SHRINK_TIER, knob_role
from kernelproof.workers.pair import WorkerPair

#: Halvings tried before giving up on fitting a task into the budget.
MAX_HALVINGS = 64

#: Output elements below which a scaled-down task gets a ``warn``: a check on a handful of
#: numbers says little (a VGG16 scaled to batch 1 and one class compared a single number).
TINY_OUTPUT_ELEMENTS = 16


@dataclass(frozen=True)
class Sizing:
    knobs: dict[str, int]
    scaled_down: str | None = None
    """Why and how the knobs were scaled down, when they were."""

    warning: str | None = None
    """Why the task could not be sized (it then runs at its own knobs)."""

    tiny_output: str | None = None
    """Set when the scaled-down outputs hold so few elements that checks say little."""


def fit_default_shape(pair: WorkerPair, knobs: dict[str, int], settings: Settings) -> Sizing:
    """Shrink the knobs that keep the output informative until one call's estimated bytes
    and FLOPs fit the budget.

    Batch and spatial (or sequence) knobs go first, the largest first; then knobs whose name
    says nothing; channel and feature counts only when nothing else is left; class counts and
    structural knobs (kernel size, stride, layers) never (see :mod:`kernelproof.tasks.
    knob_roles`). A halving the reference cannot run (a pooling net's image shrunk below what
    its pools need) is undone and that knob left where it was."""
    estimate = _estimate(pair, knobs)
    if estimate is None:
        return Sizing(
            knobs,
            warning="the task could not be sized on the meta device; it runs at its own knobs",
        )
    if _fits(estimate, settings):
        return Sizing(knobs)
    needed = _describe(estimate)
    original, current = dict(knobs), dict(knobs)
    stuck: dict[str, str] = {}
    for _ in range(MAX_HALVINGS):
        name = _next_to_shrink(current, stuck)
        if name is None:
            break
        trial = {**current, name: max(1, current[name] // 2)}
        trial_estimate = _estimate(pair, trial)
        if trial_estimate is None:
            stuck[name] = f"{name} kept at {current[name]} (the reference fails at {trial[name]})"
            continue
        current, estimate = trial, trial_estimate
        if _fits(estimate, settings):
            break
    return Sizing(
        current,
        scaled_down=_scaled_text(original, current, stuck, needed, estimate, settings),
        tiny_output=_tiny_output_text(estimate, current),
    )


def _next_to_shrink(current: dict[str, int], stuck: dict[str, str]) -> str | None:
    """The knob to halve next: the lowest shrink tier, the largest value within it."""
    candidates = [
        (SHRINK_TIER[role], -value, name)
        for name, value in current.items()
        if value > 1 and name not in stuck and (role := knob_role(name)) in SHRINK_TIER
    ]
    return min(candidates)[2] if candidates else None


def _scaled_text(
    original: dict[str, int],
    current: dict[str, int],
    stuck: dict[str, str],
    needed: str,
    estimate: PlanReply,
    settings: Settings,
) -> str:
    changed = ", ".join(f"{k} {original[k]}->{v}" for k, v in current.items() if v != original[k])
    kept = [f"{k}={v}" for k, v in current.items() if v == original[k] and k not in stuck and v > 1]
    text = (
        f"the task's default shape needs ~{needed} per call, over this machine's budget "
        f"({settings.max_call_bytes / 2**20:.0f} MiB, {settings.max_call_flops / 1e9:.1f} "
        f"GFLOP); knobs scaled down: {changed or 'none'}"
    )
    if kept:
        text += f"; kept: {', '.join(kept)}"
    if stuck:
        text += f"; {'; '.join(stuck.values())}"
    if not _fits(estimate, settings):
        text += f"; still ~{_describe(estimate)} per call: nothing else can shrink"
    return text


def _tiny_output_text(estimate: PlanReply, knobs: dict[str, int]) -> str | None:
    elements = estimate.output_elements
    if elements is None or elements >= TINY_OUTPUT_ELEMENTS:
        return None
    shape = ", ".join(f"{k}={v}" for k, v in knobs.items())
    return (
        f"scaled down to {shape}, the task's outputs hold only {int(elements)} element(s): "
        f"every check compares that few numbers. Give a larger budget "
        f"(max_call_bytes, max_call_flops) or choose the shape with --knobs"
    )


def _estimate(pair: WorkerPair, knobs: dict[str, int]) -> PlanReply | None:
    """The meta-device estimate at ``knobs``; None when the task cannot be sized there."""
    response = pair.ask_reference(PlanRequest(knobs=knobs))
    if not response.ok:
        return None
    estimate = response.data
    return estimate if estimate.ok else None


def _fits(estimate: PlanReply, settings: Settings) -> bool:
    return (
        _bytes(estimate) <= settings.max_call_bytes and _flops(estimate) <= settings.max_call_flops
    )


def _bytes(estimate: PlanReply) -> float:
    assert estimate.bytes is not None, "a successful estimate has its bytes"
    return estimate.bytes


def _flops(estimate: PlanReply) -> float:
    assert estimate.flops is not None, "a successful estimate has its FLOPs"
    return estimate.flops


def _describe(estimate: PlanReply) -> str:
    text = f"{_bytes(estimate) / 2**20:.0f} MiB"
    flops = _flops(estimate)
    return text + (f" and {flops / 1e9:.1f} GFLOP" if flops else "")


#: A size past 16 bits that does not fit the budget as the task has it is fitted into this
#: share of ``max_call_bytes``: the cell tests an index width, which small other dims test as
#: well, and an interpreted kernel (Triton's on CPU) took minutes on a full budget's call.
FITTED_SHARE = 16

#: Share of a call's bytes one halving of a knob must save for the knob to count as sizing the
#: call's big tensor: halving an embedding's ids saves 3% of a call dominated by its table.
SIGNIFICANT_SAVING = 0.25


def fit_around(
    pair: WorkerPair,
    knobs: dict[str, int],
    pinned: str,
    settings: Settings,
    *,
    max_bytes: float | None = None,
) -> dict[str, int] | None:
    """``knobs`` with ``pinned`` kept and the other knobs halved until the call fits the budget
    (``max_bytes`` instead of ``max_call_bytes`` where given), or ``None`` when nothing shrinkable is left (or the task cannot be sized there).

    A size past 16 bits matters for the knob that counts rows to index (a vocabulary, a
    table): at the task's other sizes its call can need hundreds of MiB (level-1 Embedding's
    131,073 x 512 table), and dropping the variant left every 16-bit index kernel verified.
    Each step halves a shrinkable knob (see :mod:`kernelproof.tasks.knob_roles`) among those
    that size the big tensor (a halving saves :data:`SIGNIFICANT_SAVING` of the bytes), in
    sizing's own order (batch and extents, then generic knobs, then widths; the largest first):
    an embedding's width shrinks, not the number of ids it looks up, and RMSNorm's rows shrink
    before its hidden width."""
    current = dict(knobs)
    estimate = _estimate(pair, current)
    chosen: str | None = None
    for _ in range(MAX_HALVINGS):
        if estimate is None:
            return None
        if _fits(estimate, settings) and (max_bytes is None or _bytes(estimate) <= max_bytes):
            return current
        if chosen is not None and current[chosen] > 1:
            # The knob chosen last goes on halving while it keeps saving: one estimate a step
            # instead of one per knob (each is a meta-device run of the task).
            trial = {**current, chosen: current[chosen] // 2}
            found = _estimate(pair, trial)
            if found is not None and (
                1.0 - _bytes(found) / max(_bytes(estimate), 1.0) >= SIGNIFICANT_SAVING
            ):
                current, estimate = trial, found
                continue
        options = []
        for name, value in current.items():
            role = knob_role(name)
            if name == pinned or value <= 1 or role not in SHRINK_TIER:
                continue
            trial = {**current, name: value // 2}
            found = _estimate(pair, trial)
            if found is not None:
                saving = 1.0 - _bytes(found) / max(_bytes(estimate), 1.0)
                options.append((saving, (SHRINK_TIER[role], -value, name), trial, found))
        if not options:
            return None
        significant = [o for o in options if o[0] >= SIGNIFICANT_SAVING] or options
        _, (_, _, chosen), current, estimate = min(significant, key=lambda option: option[1])
    return None


def within_budget(
    pair: WorkerPair, knobs: dict[str, int], settings: Settings, *, unknown_fits: bool = True
) -> bool:
    """Whether a (grown) shape variant fits the budget. Unknown sizes (the task cannot run on
    the meta device) count as fitting for ordinary variants, not for stress variants (4x, 8x,
    past 16 bits), which could be thousands of times the default."""
    estimate = _estimate(pair, knobs)
    return unknown_fits if estimate is None else _fits(estimate, settings)


#: The largest value ``--stress-shapes`` tries for one knob: past 2**31 elements an index
#: narrowed to 32 bits wraps, and no CPU budget here holds more.
MAX_STRESS_VALUE = 2**31 + 1


def largest_fitting(
    pair: WorkerPair, knobs: dict[str, int], name: str, settings: Settings
) -> int | None:
    """The largest value of knob ``name`` (the others as in ``knobs``) whose call fits the
    budget: doubling from the default, then bisecting the last step. ``None`` when even
    double the default does not fit or the task cannot be sized on the meta device."""

    def fits(value: int) -> bool:
        estimate = _estimate(pair, {**knobs, name: value})
        return estimate is not None and _fits(estimate, settings)

    low = knobs[name]
    if low < 1 or not fits(2 * low):
        return None
    high = 2 * low
    while high < MAX_STRESS_VALUE and fits(min(2 * high, MAX_STRESS_VALUE)):
        low, high = high, min(2 * high, MAX_STRESS_VALUE)
    if high >= MAX_STRESS_VALUE:
        return high
    low, high = high, min(2 * high, MAX_STRESS_VALUE)  # low fits, high does not
    while high - low > max(1, low // 16):  # within 1/16: a few more estimates buy nothing
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


#: Elements of one tensor past which a signed 32-bit index into it wraps.
INT32_ELEMENTS = 2**31

#: Share of the device's free memory that one variant past 32 bits may take: the reference's
#: and the candidate's workers each hold its inputs, parameters and outputs at once, and the
#: candidate may allocate a workspace as large again.
DEVICE_SHARE = 0.3

#: Share of a worker's memory limit (``memory_limit_gib``) that the call's bytes may take: the
#: outputs come back to the host to be compared, and travel through a shared-memory copy.
HOST_SHARE = 0.4

#: Steps of 5% past the projected value tried before a knob counts as not growing the largest
#: tensor past the limit (the projection is exact for tensors linear in the knob).
MAX_DOUBLINGS = 40


@dataclass(frozen=True)
class PastInt32:
    """A knob value whose largest tensor passes 2**31 elements, and whether it fits."""

    name: str
    value: int
    call_bytes: float
    fits: bool
    on_device: bool = True
    """Sized against a GPU's free memory too (on the CPU, the worker's limit alone)."""

    others: dict[str, int] | None = None
    """The other knobs' values, where they differ from the default shape's (a table past 2**31
    rows is tried with the other knobs at 1)."""

    def knobs(self, default: dict[str, int]) -> dict[str, int]:
        return {**default, **(self.others or {}), self.name: self.value}

    def skipped_text(self) -> str:
        device = f"{DEVICE_SHARE:.0%} of the device's free memory or " if self.on_device else ""
        what = (
            "a table past 2**31 rows, the other knobs at 1"
            if self.others is not None
            else "a tensor past 2**31 elements"
        )
        return (
            f"{self.name}={self.value} ({what}, where a 32-bit index "
            f"wraps) needs ~{self.call_bytes / 2**30:.1f} GiB per call: more than "
            f"{device}{HOST_SHARE:.0%} of a worker's memory limit (memory_limit_gib); "
            "not run"
        )


def past_32_bits(
    pair: WorkerPair, knobs: dict[str, int], name: str, settings: Settings
) -> PastInt32 | None:
    """The smallest value of knob ``name`` (the others as in ``knobs``) at which the
    largest input or output tensor holds more than 2**31 elements: a kernel that indexes with
    a 32-bit int wraps there. It fits when its call takes at most :data:`DEVICE_SHARE` of the
    device's free memory (on a GPU) and :data:`HOST_SHARE` of a worker's memory limit: on
    this project's CPU machines (8 GiB per worker) it never does, and the report says so.
    ``None`` when the knob does not grow the largest tensor."""
    estimate = _estimate(pair, knobs)
    if estimate is None or not estimate.largest_tensor_elements or knobs[name] < 1:
        return None
    if estimate.largest_tensor_elements > INT32_ELEMENTS:
        return None
    past = _past_elements(pair, knobs, name, INT32_ELEMENTS, estimate)
    if past is None:
        return None
    call_bytes = _bytes(past[1])
    return PastInt32(
        name=name,
        value=past[0],
        call_bytes=call_bytes,
        fits=_fits_memory(call_bytes, estimate, settings),
        on_device=estimate.device_free_bytes is not None,
    )


#: Rows of a table past which a signed 32-bit row index wraps.
PAST_31_BITS = 2**31 + 1


def rows_past_31_bits(
    pair: WorkerPair, knobs: dict[str, int], name: str, settings: Settings
) -> PastInt32 | None:
    """For a knob that sizes no input or output (it counts the rows of a table the model
    holds: a vocabulary), ``name`` at 2**31 + 1 with every other shrinkable knob at 1, where
    a 32-bit row index wraps. It fits by memory as :func:`past_32_bits` does (an 8 GiB table
    of one float32 column never fits a CPU worker's 8 GiB: reported, not run). ``None`` when
    the reference cannot be sized there or the knob is structural."""
    if knob_role(name) not in SHRINK_TIER or knobs[name] >= PAST_31_BITS:
        return None
    small = {k: (1 if k != name and knob_role(k) in SHRINK_TIER else v) for k, v in knobs.items()}
    estimate = _estimate(pair, {**small, name: PAST_31_BITS})
    if estimate is None:
        return None
    call_bytes = _bytes(estimate)
    return PastInt32(
        name=name,
        value=PAST_31_BITS,
        call_bytes=call_bytes,
        fits=_fits_memory(call_bytes, estimate, settings),
        on_device=estimate.device_free_bytes is not None,
        others=small,
    )


#: Elements of one tensor past which float32 no longer holds every index exactly (2**24 + 1
#: rounds to 2**24): a kernel that computes positions or row ids in float32, or multiplies
#: them with 24-bit integer instructions, is right below it and wrong past it.
FLOAT32_EXACT_ELEMENTS = 2**24

#: Elements the variant past 2**24 grows its largest tensor to: a fifth of them past 2**24, so
#: that row boundaries (and not only the last few elements) lie where float32 positions round.
#: Just past 2**24, a row sum computing rows from float32 positions was still right.
PAST_24_BITS_ELEMENTS = FLOAT32_EXACT_ELEMENTS + FLOAT32_EXACT_ELEMENTS // 4

#: FLOPs of the variant past 2**24 elements at most, in units of ``max_call_flops``: it is
#: sized against memory, not the per-call budget, but must still run in seconds on a CPU.
PAST_24_BITS_FLOPS = 4.0


@dataclass(frozen=True)
class PastLimit:
    """The cheapest single-knob variant whose largest tensor passes ``limit`` elements."""

    name: str
    value: int
    call_bytes: float
    fits: bool
    limit: int

    def skipped_text(self) -> str:
        return (
            f"{self.name}={self.value} (a tensor past 2**{int(math.log2(self.limit))} "
            f"elements, where float32 stops holding every index) needs "
            f"~{self.call_bytes / 2**30:.2f} GiB per call: more than {HOST_SHARE:.0%} of a "
            f"worker's memory limit (memory_limit_gib) or {DEVICE_SHARE:.0%} of the "
            f"device's free memory, or over {PAST_24_BITS_FLOPS:g}x max_call_flops; not run"
        )


def past_24_bits(pair: WorkerPair, knobs: dict[str, int], settings: Settings) -> PastLimit | None:
    """The knob (batch, extent, width or generic; never a structural one) whose smallest
    value past :data:`PAST_24_BITS_ELEMENTS` elements in the largest tensor costs the fewest
    bytes, the others as in ``knobs``. It fits when its bytes fit the memory shares (as the
    variant past 2**31 does) and its FLOPs :data:`PAST_24_BITS_FLOPS` times the budget's.
    ``None`` when the default is already past it, or no knob grows the largest tensor."""
    start = _estimate(pair, knobs)
    if (
        start is None
        or not start.largest_tensor_elements
        or (start.largest_tensor_elements > FLOAT32_EXACT_ELEMENTS)
    ):
        return None
    found: list[tuple[float, int, str, PlanReply]] = []
    for name, value in knobs.items():
        if knob_role(name) not in SHRINK_TIER or value < 1:
            continue
        past = _past_elements(pair, knobs, name, PAST_24_BITS_ELEMENTS, start)
        if past is not None:
            found.append((_bytes(past[1]), past[0], name, past[1]))
    if not found:
        return None
    call_bytes, value, name, estimate = min(found)
    fits = (
        _fits_memory(call_bytes, start, settings)
        and _flops(estimate) <= PAST_24_BITS_FLOPS * settings.max_call_flops
    )
    return PastLimit(
        name=name, value=value, call_bytes=call_bytes, fits=fits, limit=FLOAT32_EXACT_ELEMENTS
    )


def _fits_memory(call_bytes: float, estimate: PlanReply, settings: Settings) -> bool:
    device_free = estimate.device_free_bytes
    return call_bytes <= HOST_SHARE * settings.memory_limit_gib * 2**30 and (
        device_free is None or call_bytes <= DEVICE_SHARE * device_free
    )


def _past_elements(
    pair: WorkerPair, knobs: dict[str, int], name: str, limit: int, start: PlanReply
) -> tuple[int, PlanReply] | None:
    """A value of knob ``name`` (near the smallest) at which the largest tensor holds more
    than ``limit`` elements: the growth of one doubling gives the power law (a square
    matrix's elements grow as the knob squared), projected to the limit and checked; a few
    estimates, not a bisection's thirty. ``None`` when the knob does not grow the tensors."""
    value = knobs[name]
    elements = start.largest_tensor_elements or 0.0
    doubled = _estimate(pair, {**knobs, name: 2 * value})
    if doubled is None or (doubled.largest_tensor_elements or 0.0) <= elements:
        return None
    exponent = math.log2((doubled.largest_tensor_elements or 0.0) / elements)
    trial = max(value + 1, math.ceil(value * ((limit + 1) / elements) ** (1 / exponent)))
    for _ in range(MAX_DOUBLINGS):
        found = _estimate(pair, {**knobs, name: trial})
        if found is None:
            return None
        if (found.largest_tensor_elements or 0.0) > limit:
            return trial, found
        trial = max(trial + 1, math.ceil(trial * 1.05))
    return None
