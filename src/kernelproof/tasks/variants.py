"""Planning the correctness matrix: which knob settings, seeds and transforms to run.

A candidate that only ever sees the benchmark's one shape and one seed can hard-code its way
through. The matrix therefore varies every knob (smaller, larger, odd, prime, 1, production
sizes that are whole tiles but not powers of two, past 16 bits), the values (scaled up to 1e5,
shifted, across the finite range, with Inf and NaN planted) and the memory layout (strided,
offset).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from kernelproof.config import Settings
from kernelproof.schema.correctness import CorrectnessTest, TestOutcome
from kernelproof.schema.variant import InputVariant, LayoutTransform, ValueTransform, VariantKind


def draw_seeds(base_seed: int, count: int) -> tuple[int, list[int]]:
    """The weights' seed and ``count`` input seeds of a run, all drawn from its base seed, so
    ``--seed BASE`` reproduces every draw (verify and audit-task draw the same way)."""
    draw = random.Random(base_seed)
    init_seed = draw.randrange(2**31)
    return init_seed, [draw.randrange(2**31) for _ in range(count)]


#: Growth factors past the usual double: tiles whose partial results are never combined, or a
#: fixed scratch buffer, fail only from about 4x the benchmark's size.
STRESS_FACTORS = (4, 8)

#: A size just past the 16-bit limit: 2 * 2**16 + 1 wraps to 1 under 16-bit narrowing, as
#: 2**16 + 1 does, and half of the ids drawn uniformly below it exceed 2**16 (with 2**16 + 1,
#: one id in 65537 would), so an index cast to uint16 is caught, not only a length.
PAST_16_BITS = 2 * 2**16 + 1

#: Multipliers of a power of two that production sizes are built from (1536 = 3 * 512, 5120 =
#: 5 * 1024, 6144 = 3 * 2048, 12288 = 3 * 4096): a whole number of tiles of any power-of-two
#: size up to 2**k, whose count is not a power of two. A kernel tried only at powers of two
#: (and at odd sizes, which take its remainder path) can assume a power-of-two tile count.
PRODUCTION_MULTIPLIERS = (3, 5)

#: Knobs below this get no production sizes: a tile count needs a tile to count.
MIN_PRODUCTION_KNOB = 16

#: Extra runs on the first seed's inputs, to see races and nondeterminism (HACKS row 21).
REPEATS = 2


@dataclass(frozen=True)
class ShapeGroup:
    """Variants that share one knob setting, so the models are built once for all of them."""

    label: str
    knobs: dict[str, int]
    """Full knob values of this group (not only the ones that differ)."""

    variants: list[InputVariant] = field(default_factory=list)
    is_default: bool = False
    grows: bool = False
    """Some knob is larger than at the default shape: check the budget before running."""

    stress: bool = False
    """Past 2x or past a size limit: compared with the reference's own output (no float64
    oracle, at a tolerance derived from smaller variants) and not timed."""

    device_sized: bool = False
    """Sized against the device's (or the host's) free memory (a tensor past 2**24 or 2**31
    elements), not against the per-call budget that keeps ordinary variants quick."""

    pinned: str | None = None
    """The knob this group exists for (a size past 16 bits): where the call does not fit the
    budget, the other knobs are shrunk until it does, rather than the group dropped."""


def plan_matrix(
    default_knobs: dict[str, int],
    declared_shapes: list[dict[str, int]],
    seeds: list[int],
    settings: Settings,
    task_values: list[str] | None = None,
    stress_sizes: dict[str, int] | None = None,
    past_32_bits: list[dict[str, int]] | None = None,
    past_24_bits: dict[str, int] | None = None,
) -> list[ShapeGroup]:
    """The shape groups to run, the default shape first.

    Value variants (built-in and the task's own ``task_values``) run at the default shape on
    the first seed only: each costs one reference and one candidate call. ``stress_sizes``
    (``--stress-shapes``) adds, per knob, the largest size that fits the budget;
    ``past_32_bits``, the knob settings (over the default's) whose largest tensor passes 2**31
    elements, or whose table passes 2**31 rows, where memory allows; ``past_24_bits``, the one knob's size whose largest tensor passes 2**24
    elements most cheaply."""
    first = seeds[0]
    default = ShapeGroup(label="default", knobs=dict(default_knobs), is_default=True)
    for index, seed in enumerate(seeds):
        default.variants.append(
            InputVariant(name=f"seed:{index}", kind=VariantKind.SEED, seed=seed)
        )
    if settings.inputs_file:
        # A replay: the saved call is the point; the seeds keep the usual default-shape checks
        # (a candidate that fails there is broken, the op audit has its reference call).
        name = Path(settings.inputs_file).name
        default.variants.append(
            InputVariant(name=f"saved:{name}", kind=VariantKind.SAVED, seed=first)
        )
        return [default]
    for index in range(1, REPEATS + 1):
        default.variants.append(
            InputVariant(name=f"repeat:{index}", kind=VariantKind.REPEAT, seed=first)
        )
    if settings.value_variants:
        for transform in ValueTransform:
            default.variants.append(
                InputVariant(
                    name=f"value:{transform.value}",
                    kind=VariantKind.VALUE,
                    seed=first,
                    value=transform,
                )
            )
        for name in task_values or []:
            default.variants.append(
                InputVariant(
                    name=f"value:task:{name}",
                    kind=VariantKind.VALUE,
                    seed=first,
                    task_value=name,
                )
            )
    if settings.layout_variants:
        for layout in LayoutTransform:
            default.variants.append(
                InputVariant(
                    name=f"layout:{layout.value}",
                    kind=VariantKind.LAYOUT,
                    seed=first,
                    layout=layout,
                )
            )
    groups = [default]
    if not settings.shape_variants:
        return groups
    seen = {_key(default_knobs)}
    candidates = [dict(default_knobs, **shape) for shape in declared_shapes]
    pinned: dict[tuple[tuple[str, int], ...], str] = {}
    if settings.generated_shapes or not declared_shapes:
        candidates += _generated_shapes(default_knobs)
        candidates += _production_sizes(default_knobs)
        candidates += _past_limits(default_knobs)
        for name, value in default_knobs.items():
            if 1 <= value < PAST_16_BITS:
                past = dict(default_knobs, **{name: PAST_16_BITS})
                pinned[_key(past)] = name
                candidates.append(past)
    candidates += [dict(default_knobs, **{k: v}) for k, v in (stress_sizes or {}).items()]
    by_memory = [dict(default_knobs, **{k: v}) for k, v in (past_24_bits or {}).items()]
    by_memory += [dict(default_knobs, **changes) for changes in past_32_bits or []]
    device_sized = {_key(knobs) for knobs in by_memory}
    candidates += by_memory
    for knobs in candidates:
        key = _key(knobs)
        if key in seen or set(knobs) != set(default_knobs):
            continue
        seen.add(key)
        changed = {k: v for k, v in knobs.items() if v != default_knobs[k]}
        label = "shape:" + ",".join(f"{k}={v}" for k, v in changed.items())
        stress = any(v > 2 * default_knobs[k] for k, v in changed.items())
        groups.append(
            ShapeGroup(
                label=label,
                knobs=knobs,
                variants=[
                    InputVariant(name=label, kind=VariantKind.SHAPE, knobs=changed, seed=first)
                ],
                grows=any(v > default_knobs[k] for k, v in changed.items()),
                stress=stress or key in device_sized,
                device_sized=key in device_sized,
                pinned=pinned.get(key),
            )
        )
    return groups


@dataclass(frozen=True)
class MatrixOrder:
    """The order the matrix runs its groups in, in three runs: the native audit samples the
    workers' stacks during :attr:`sampled` (the default shape's cells, the calls the op audit
    compares), not during the others (sampling pauses the workers)."""

    before: list[ShapeGroup]
    sampled: list[ShapeGroup]
    after: list[ShapeGroup]


def matrix_order(groups: list[ShapeGroup], fail_fast: bool) -> MatrixOrder:
    """The default shape, then the other shapes; with ``fail_fast``, the cheapest decisive
    evidence first: the default shape's first cell and every shape group that is not a stress
    shape (one cell each) come before the default shape's other cells (repeats, values,
    layouts), and the stress shapes last. A kernel wrong only at some sizes (the common RL
    failure after "wrong everywhere") is then rejected after a few cells, not after the
    default shape's twenty."""
    default = [g for g in groups if g.is_default]
    others = [g for g in groups if not g.is_default]
    if not fail_fast or not default or len(default[0].variants) < 2:
        return MatrixOrder([], default, others)
    head = default[0]
    first = replace(head, variants=head.variants[:1])
    rest = replace(head, variants=head.variants[1:])
    cheap = [g for g in others if not g.stress]
    return MatrixOrder([first, *cheap], [rest], [g for g in others if g.stress])


def refitted(group: ShapeGroup, knobs: dict[str, int], default_knobs: dict[str, int]) -> ShapeGroup:
    """``group`` at ``knobs`` instead (its pinned knob kept, others shrunk to the budget)."""
    changed = {k: v for k, v in knobs.items() if v != default_knobs[k]}
    label = "shape:" + ",".join(f"{k}={v}" for k, v in changed.items())
    seed = group.variants[0].seed
    return replace(
        group,
        label=label,
        knobs=knobs,
        variants=[InputVariant(name=label, kind=VariantKind.SHAPE, knobs=changed, seed=seed)],
    )


def largest_verified(tests: list[CorrectnessTest], default_knobs: dict[str, int]) -> dict[str, int]:
    """Per knob, the largest value at which some test passed (the knob's other values as
    that test had them)."""
    largest: dict[str, int] = {}
    for test in tests:
        if test.outcome is not TestOutcome.PASSED:
            continue
        for name, value in {**default_knobs, **test.variant.knobs}.items():
            largest[name] = max(largest.get(name, value), value)
    return largest


def _past_limits(default: dict[str, int]) -> list[dict[str, int]]:
    """Per knob: 4x and 8x (the size just past 16 bits is planned with its knob pinned)."""
    return [
        dict(default, **{name: value * factor})
        for name, value in default.items()
        for factor in STRESS_FACTORS
        if value >= 1
    ]


def _production_sizes(default: dict[str, int]) -> list[dict[str, int]]:
    """Per knob of at least :data:`MIN_PRODUCTION_KNOB`: the one ``3 * 2**k`` in ``(v, 2v]``
    and the one ``5 * 2**k`` in ``[v/2, v)`` (1536 and 640 next to 1000; 6144 and 2560 next
    to 4096): within 2x, so compared with the oracle and timed like the other neighbours."""
    shapes: list[dict[str, int]] = []
    for name, value in default.items():
        if value < MIN_PRODUCTION_KNOB:
            continue
        above = _multiple_of_power_of_two(PRODUCTION_MULTIPLIERS[0], value + 1)
        below = _multiple_of_power_of_two(PRODUCTION_MULTIPLIERS[1], (value + 1) // 2)
        shapes += [
            dict(default, **{name: size})
            for size in (above, below)
            if size != value and size <= 2 * value
        ]
    return shapes


def _multiple_of_power_of_two(multiplier: int, at_least: int) -> int:
    """The smallest ``multiplier * 2**k`` (k >= 0) that is at least ``at_least``."""
    size = multiplier
    while size < at_least:
        size *= 2
    return size


def _key(knobs: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(knobs.items()))


def _generated_shapes(default: dict[str, int]) -> list[dict[str, int]]:
    """Per knob: half, an odd neighbour, a prime below, 1 and double; then all knobs odd."""
    shapes: list[dict[str, int]] = []
    for name, value in default.items():
        options = [value // 2, _odd_neighbour(value), _prime_below(value), 1, value * 2]
        for option in options:
            if option >= 1 and option != value:
                shapes.append(dict(default, **{name: option}))
    odd_everywhere = {k: _odd_neighbour(v) if v >= 2 else v for k, v in default.items()}
    if len(default) > 1:
        shapes.append(odd_everywhere)
    return shapes


def _odd_neighbour(value: int) -> int:
    return value + 1 if value % 2 == 0 else value + 2


def _prime_below(value: int) -> int:
    """The largest prime strictly below ``value`` (0 when there is none)."""
    for n in range(value - 1, 1, -1):
        if all(n % d for d in range(2, int(n**0.5) + 1)):
            return n
    return 0
