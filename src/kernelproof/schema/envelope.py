"""The envelope of a report: every call signature the correctness matrix passed at, and the
knob ranges between them that count as covered.

A verdict says what held on the inputs that were tried. The envelope says which inputs those
were, in a form that is cheap to check one call against: the end-to-end check compares a host's
calls with it, and :func:`kernelproof.guard` routes a production call to the candidate only
when the call is inside it.

The rule for "inside" (:meth:`Envelope.contains`):

1. **Exact.** The call's signature (per argument: shape, dtype, strides, contiguity, device;
   or a plain value) equals one at which a matrix cell passed. Layout variants (strided views,
   storage offsets) are inside only this way.
2. **One knob over a covered range.** Every argument is a contiguous tensor or a plain value,
   the call matches a *template* (a contiguous signature of the default shape) in everything
   but the dimensions bound to one knob, and those dimensions all map back to one value of that
   knob inside its :class:`KnobRange`, which must be ``covered``. How a range is decided is
   documented on :class:`KnobRange` and in ``docs/shipping.md``.

Anything else, including a call that varies two knobs at once, is outside. Pure pydantic: torch
is only looked up (never imported) when a signature is built from live arguments.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from kernelproof.schema.fingerprint import EnvironmentFingerprint

#: Python types whose values are part of a signature (a different value is a different call).
PLAIN_VALUE_TYPES = (bool, int, float, str, type(None))


class TensorSignature(BaseModel):
    """What routing needs to know about one tensor argument: never its values."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["tensor"] = "tensor"
    """Tells tensor and value signatures apart in JSON."""

    shape: tuple[int, ...]
    """The tensor's sizes."""

    dtype: str
    """The torch dtype's name without ``torch.`` (``float32``)."""

    strides: tuple[int, ...]
    """The tensor's strides, in elements."""

    contiguous: bool
    """Whether the tensor is contiguous in row-major order."""

    device: str
    """``cpu`` or ``cuda`` (no index)."""

    def describe(self) -> str:
        layout = "" if self.contiguous else f" strides={list(self.strides)}"
        return f"{self.dtype}{list(self.shape)}{layout}@{self.device}"


class ValueSignature(BaseModel):
    """A non-tensor argument: its type, and its value when it is a plain value."""

    model_config = ConfigDict(frozen=True, ser_json_inf_nan="null")

    kind: Literal["value"] = "value"
    """Tells tensor and value signatures apart in JSON."""

    type: str
    """The Python type's name (``int``, ``float``, ``NoneType``...)."""

    value: bool | int | float | str | None = None
    """The value itself for bool, int, float, str and None; None for other types."""

    opaque: bool = False
    """True for any other type (a list, a module...): its value is not part of the signature,
    so such a call is never inside an envelope (two such calls cannot be told apart)."""

    def describe(self) -> str:
        return f"<{self.type}>" if self.opaque else repr(self.value)


ArgumentSignature = Annotated[TensorSignature | ValueSignature, Field(discriminator="kind")]
"""One positional argument's signature."""


class CallSignature(BaseModel):
    """The signature of one call: one entry per positional argument. Hashable (routing caches
    its decision per signature)."""

    model_config = ConfigDict(frozen=True)

    args: tuple[ArgumentSignature, ...]
    """Per positional argument, a tensor's or a value's signature."""

    @classmethod
    def of(cls, args: Sequence[Any]) -> CallSignature:
        """The signature of a call with these positional arguments. Reads metadata only (no
        synchronisation, no copy)."""
        torch = sys.modules.get("torch")  # no tensor can exist before torch is imported
        tensor_type = torch.Tensor if torch is not None else ()
        entries: list[TensorSignature | ValueSignature] = []
        for arg in args:
            if tensor_type and isinstance(arg, tensor_type):
                entries.append(
                    TensorSignature(
                        shape=tuple(arg.shape),
                        dtype=str(arg.dtype).removeprefix("torch."),
                        strides=tuple(arg.stride()),
                        contiguous=arg.is_contiguous(),
                        device=arg.device.type,
                    )
                )
            elif isinstance(arg, PLAIN_VALUE_TYPES):
                entries.append(ValueSignature(type=type(arg).__name__, value=arg))
            else:
                entries.append(ValueSignature(type=type(arg).__name__, opaque=True))
        return cls(args=tuple(entries))

    @property
    def routable(self) -> bool:
        """False when some argument is opaque: such a call can only go to the reference."""
        return not any(isinstance(a, ValueSignature) and a.opaque for a in self.args)

    def describe(self) -> str:
        """One line: ``(float32[64, 4096]@cpu, 1.5)``."""
        return "(" + ", ".join(a.describe() for a in self.args) + ")"


class DimensionBinding(BaseModel):
    """One tensor dimension that follows a knob: ``size = scale * knob + offset``."""

    model_config = ConfigDict(frozen=True)

    arg: int
    """Position of the tensor among the call's arguments."""

    dim: int
    """The dimension of that tensor."""

    scale: int
    """Integer factor (non-zero) of the knob in the size."""

    offset: int = 0
    """Integer added to it."""

    def knob_value(self, size: int) -> int | None:
        """The knob value that gives ``size``, or None when none does."""
        shifted = size - self.offset
        if shifted % self.scale:
            return None
        return shifted // self.scale


def integer_line(sizes: dict[int, int]) -> tuple[int, int] | None:
    """``(scale, offset)`` with integer values such that every size is scale * knob + offset
    (``sizes`` maps knob values to sizes; at least two of them), or None when none is."""
    (k0, s0), (k1, s1) = sorted(sizes.items())[:2]
    if (s1 - s0) % (k1 - k0):
        return None
    scale = (s1 - s0) // (k1 - k0)
    offset = s0 - scale * k0
    if scale == 0 or any(scale * k + offset != s for k, s in sizes.items()):
        return None
    return scale, offset


#: A range needs at least this many verified values of its knob (the default included).
MIN_RANGE_VALUES = 3

#: Neighbouring verified values in a covered range differ by at most this factor, and every
#: value lies within it of a verified odd value: between the half, the default and the double
#: that the matrix runs, no untested stretch is longer than the one below it.
MAX_RANGE_GAP = 2.0


class KnobRange(BaseModel):
    """Per knob, the values at which the matrix passed with every other knob at the default,
    and whether the span between them counts as covered.

    The rule: starting from the default value, the range grows to the next verified value on
    either side while (a) it is at most :data:`MAX_RANGE_GAP` times the last (or 1/that below),
    (b) no cell at a value between them failed, raised or crashed, and (c) it lies within
    :data:`MAX_RANGE_GAP` of a verified odd value above 1. It is ``covered`` when it then holds
    at least :data:`MIN_RANGE_VALUES` verified values, one of them odd, and every input
    dimension that changed with the knob is an exact integer-linear function of it
    (``bindings``). Otherwise only the verified values themselves are inside (exact match)."""

    model_config = ConfigDict(frozen=True)

    knob: str
    """The knob's name, as in the task file."""

    values: list[int]
    """Values verified with every other knob at the default (sorted, the default included)."""

    low: int
    """The lowest value of the range grown from the default (equal to ``high`` when only the
    default is in it)."""

    high: int
    """The highest value of that range."""

    covered: bool
    """Whether a call at any value in ``[low, high]`` counts as inside."""

    reason: str
    """Why it is covered or not, in plain words."""

    bindings: list[DimensionBinding] = Field(default_factory=list)
    """The input dimensions that follow the knob (empty: the inputs do not depend on it)."""

    def describe(self) -> str:
        span = f"{self.low}..{self.high}" if self.covered else "exact values only"
        return f"{self.knob}: {span} (verified at {', '.join(map(str, self.values))})"


class Envelope(BaseModel):
    """Where a report's verdict holds: the signatures the matrix passed at, and knob ranges.

    Built by the controller from the cells that passed, with the signatures the trusted
    reference worker read off the inputs of each run (the candidate worker builds the same
    inputs from the same seed)."""

    signatures: list[CallSignature] = Field(default_factory=list)
    """Every distinct signature at which some matrix cell passed (layout variants included)."""

    knobs: list[dict[str, int]] = Field(default_factory=list)
    """The full knob values of the first passed cell of each signature, in the same order."""

    templates: list[CallSignature] = Field(default_factory=list)
    """The contiguous signatures of the default shape, which ranges vary one knob of."""

    default_knobs: dict[str, int] = Field(default_factory=dict)
    """The knob values of the default shape."""

    ranges: list[KnobRange] = Field(default_factory=list)
    """One entry per knob of the task."""

    environment: EnvironmentFingerprint | None = None
    """The environment the envelope was proved in (a copy of the report's fingerprint, so an
    envelope carried on its own still says where it holds); ``None`` in older reports. The
    guard refuses to serve outside it (``docs/shipping.md``)."""

    _index: dict[CallSignature, int] | None = PrivateAttr(default=None)

    def contains(self, signature: CallSignature) -> bool:
        """Whether a call with this signature is inside: an exact match, else one covered
        knob range (see the module's docstring)."""
        return self.knobs_for(signature) is not None

    def knobs_for(self, signature: CallSignature) -> dict[str, int] | None:
        """The knob values a call inside the envelope corresponds to (what a replay renders
        the task at), or None when the call is outside."""
        if self._index is None:
            self._index = {}
            for index, known in enumerate(self.signatures):
                self._index.setdefault(known, index)
        position = self._index.get(signature)
        if position is not None:
            return (
                dict(self.knobs[position])
                if position < len(self.knobs)
                else dict(self.default_knobs)
            )
        if not signature.routable:
            return None
        for knob_range in self.ranges:
            if not knob_range.covered or not knob_range.bindings:
                continue
            for template in self.templates:
                value = _knob_value(signature, template, knob_range)
                if value is not None:
                    return {**self.default_knobs, knob_range.knob: value}
        return None

    def describe(self) -> str:
        """One line: how many signatures, and each knob's range."""
        covered = [r.describe() for r in self.ranges if r.covered]
        ranges = "; ".join(covered) if covered else "no knob range covered"
        return f"{len(self.signatures)} verified signature(s); {ranges}"


def _knob_value(
    signature: CallSignature, template: CallSignature, knob_range: KnobRange
) -> int | None:
    """The value of the range's knob at which ``template`` becomes ``signature``, when the
    two differ only in the knob's dimensions and the value is inside the range."""
    if len(signature.args) != len(template.args):
        return None
    bound = {(b.arg, b.dim): b for b in knob_range.bindings}
    value: int | None = None
    for position, (arg, known) in enumerate(zip(signature.args, template.args)):
        if isinstance(known, ValueSignature) or isinstance(arg, ValueSignature):
            if arg != known:
                return None
            continue
        if (arg.dtype, arg.device, len(arg.shape)) != (known.dtype, known.device, len(known.shape)):
            return None
        if not arg.contiguous:
            return None
        for dim, (size, known_size) in enumerate(zip(arg.shape, known.shape)):
            binding = bound.get((position, dim))
            if binding is None:
                if size != known_size:
                    return None
                continue
            implied = binding.knob_value(size)
            if implied is None or (value is not None and implied != value):
                return None
            value = implied
    if value is None or not knob_range.low <= value <= knob_range.high:
        return None
    return value
