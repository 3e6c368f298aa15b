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


class ValueTransform(str, Enum):
    """How floating-point inputs are transformed after generation."""

    SCALE_UP = "scale-1e3"
    SCALE_DOWN = "scale-1e-3"
    SHIFT = "shift"
    SPECIAL = "inf-nan"
    """Plants +Inf, -Inf and NaN at seeded positions of the first floating-point input."""


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
    """What the variant changes relative to the default inputs."""

    knobs: dict[str, int] = Field(default_factory=dict)
    """Knob values that differ from the task's defaults. Empty means the default shape."""

    seed: int
    """Seed the inputs are built from."""

    value: ValueTransform | None = None
    """The value transform, if any."""

    layout: LayoutTransform | None = None
    """The layout transform, if any."""

    @property
    def planted_special_values(self) -> bool:
        return self.value is ValueTransform.SPECIAL
