"""Variants of a task's inputs: the rows of the correctness matrix."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class VariantKind(str, Enum):
    """What a variant changes relative to the default inputs."""

    SEED = "seed"
    """The default shape with another random seed."""

    SHAPE = "shape"
    """Different knob values (sizes); derived constants follow."""

    VALUE = "value"
    """The default shape with transformed values: scaled, shifted, special values planted."""

    LAYOUT = "layout"
    """The default values laid out differently in memory: strided views, storage offsets."""

    REPEAT = "repeat"
    """The first seed's inputs again: identical runs must give identical-enough answers."""

    SAVED = "saved"
    """Arguments saved from a real call (a guard incident's ``inputs.pt``, ``verify
    --inputs``), run at the default shape instead of inputs built from the seed."""


class ValueTransform(str, Enum):
    """How floating-point inputs are transformed after generation."""

    SCALE_UP = "scale-1e3"
    SCALE_UP_4 = "scale-1e4"
    """randn times 1e4: magnitudes a kernel tested on randn and randn * 1e3 never met."""

    SCALE_UP_5 = "scale-1e5"
    """randn times 1e5."""

    SCALE_DOWN = "scale-1e-3"
    SHIFT = "shift"
    SPECIAL = "inf-nan"
    """Plants +Inf, -Inf and NaN at seeded positions of the first floating-point input."""

    INTEGERS = "integers"
    """Small integers (-6..6): many exact ties, as in argmax or sorting over counts."""

    QUANTISED = "quantised"
    """17 levels in [-1, 1], as after int4-style quantisation: ties and repeated values."""

    EQUAL_ROWS = "equal-rows"
    """Every row (last dimension) holds one value repeated: all elements of a row tie."""

    REPEATED_ROWS = "repeated-rows"
    """Every row equals the first row: caches or reductions keyed on row content collide."""

    NEGATIVE_ZERO = "negative-zero"
    """A quarter of the elements set to -0.0 and a quarter to +0.0: the sign of zero shows."""

    DENORMAL = "denormal"
    """Values scaled into the dtype's subnormal range: flush-to-zero and lost precision show."""

    LARGEST = "largest-finite"
    """Values scaled towards the dtype's largest finite value (kept finite through a sum over
    the last dimension where possible): overflow in intermediate results shows."""

    WIDE_RANGE = "wide-range"
    """Magnitudes spread log-uniformly from the reciprocal of the largest-finite variant's
    scale up to it (the inputs' signs kept): every decade of the finite range where the
    reference stays finite, in one input, so a kernel right only below some magnitude shows."""


class LayoutTransform(str, Enum):
    """How inputs are laid out in memory. Values are unchanged."""

    NON_CONTIGUOUS = "non-contiguous"
    STORAGE_OFFSET = "storage-offset"


class InputVariant(BaseModel):
    """A fully specified input set: knobs, seed and transforms. Workers rebuild it from this."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Human-readable and unique within a run, e.g. ``shape:dim=8191`` or ``value:scale-1e3``."""

    kind: VariantKind
    knobs: dict[str, int] = Field(default_factory=dict)
    """Knob values that differ from the task's defaults. Empty means the default shape."""

    seed: int
    value: ValueTransform | None = None
    layout: LayoutTransform | None = None

    task_value: str | None = None
    """The name of a value generator the task declares in ``VALUE_VARIANTS``, if any."""

    @property
    def planted_special_values(self) -> bool:
        """Inputs where a non-finite reference output is expected (planted Inf/NaN, values
        near overflow or underflow, signed zeros): a candidate that gives numbers there is
        told it turns bad input into numbers. It is ``incorrect`` on every variant alike."""
        return self.value in EDGE_VALUE_TRANSFORMS


#: Value transforms after which the reference may legitimately produce Inf or NaN (1/-0.0,
#: overflow near the largest finite value).
EDGE_VALUE_TRANSFORMS = frozenset(
    {
        ValueTransform.SPECIAL,
        ValueTransform.NEGATIVE_ZERO,
        ValueTransform.DENORMAL,
        ValueTransform.LARGEST,
        ValueTransform.WIDE_RANGE,
    }
)
