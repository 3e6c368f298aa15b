"""What a task's knob means, guessed from its name, so that sizing shrinks the right ones.

Scaling a task down to the machine must keep its output informative. A VGG16 scaled to
``batch_size 1, num_classes 1`` compared a single number per check. Batch and spatial sizes
(or sequence lengths) change how much work a call does without changing what it computes;
class, channel and feature counts change the computation and the output's width; kernel
sizes, strides and layer counts change its meaning outright.
"""

from __future__ import annotations

import re
from enum import IntEnum


class KnobRole(IntEnum):
    """What a knob sizes. :data:`SHRINK_TIER` says in which order sizing shrinks them."""

    BATCH = 0
    """The batch size: the output keeps its meaning per sample."""

    EXTENT = 1
    """A spatial size or a sequence length."""

    GENERIC = 2
    """A name sizing cannot place (``dim``, ``N``, ``M``, ``K``)."""

    WIDTH = 3
    """A channel, feature or hidden count."""

    FIXED = 4
    """Class counts and structure (kernel size, stride, padding, groups, layers, heads)."""


#: Sizing shrinks tier 0 first (batch and extents together, the largest first), then tier
#: 1, then tier 2 only when nothing else is left. FIXED knobs are never shrunk: the task would
#: compute something else.
SHRINK_TIER: dict[KnobRole, int] = {
    KnobRole.BATCH: 0,
    KnobRole.EXTENT: 0,
    KnobRole.GENERIC: 1,
    KnobRole.WIDTH: 2,
}


#: Name tokens of each role, matched against the knob's lower-case ``_``-separated parts.
#: FIXED is checked first (``kernel_size`` holds ``size``), then BATCH, EXTENT, WIDTH; a bare
#: ``size`` comes last (``hidden_size`` is a width, ``image_size`` an extent).
ROLE_TOKENS: tuple[tuple[KnobRole, frozenset[str]], ...] = (
    (
        KnobRole.FIXED,
        frozenset(
            {
                "classes",
                "class",
                "labels",
                "kernel",
                "stride",
                "padding",
                "pad",
                "dilation",
                "groups",
                "layers",
                "heads",
                "head",
                "blocks",
                "stages",
                "topk",
                "order",
            }
        ),
    ),
    (KnobRole.BATCH, frozenset({"batch", "bs", "b"})),
    (
        KnobRole.EXTENT,
        frozenset(
            {
                "height",
                "width",
                "depth",
                "h",
                "w",
                "d",
                "length",
                "len",
                "seq",
                "sequence",
                "image",
                "img",
                "spatial",
                "tokens",
                "time",
                "steps",
                "frames",
                "pixels",
                "resolution",
                "l",
                "t",
                "x",
                "y",
                "z",
            }
        ),
    ),
    (
        KnobRole.WIDTH,
        frozenset(
            {
                "channels",
                "channel",
                "features",
                "feature",
                "hidden",
                "embed",
                "embedding",
                "vocab",
                "experts",
                "units",
                "filters",
                "c",
                "in",
                "out",
                "planes",
                "growth",
                "input",
            }
        ),
    ),
    (KnobRole.EXTENT, frozenset({"size"})),
)

#: ``dim1``, ``dim2``: KernelBench's names for the spatial extents of an image-like input.
EXTENT_PATTERN = re.compile(r"^dim_?\d+$")


def knob_role(name: str) -> KnobRole:
    """The role of the knob called ``name`` (``GENERIC`` when the name says nothing)."""
    lowered = name.lower()
    if EXTENT_PATTERN.match(lowered):
        return KnobRole.EXTENT
    parts = {p for p in re.split(r"[_\d]+", lowered) if p}
    for role, tokens in ROLE_TOKENS:
        if parts & tokens:
            return role
    return KnobRole.GENERIC
