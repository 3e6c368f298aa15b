"""The correctness matrix laid out as a grid: one row per input variant, one column per seed.

The matrix runs every seed at the default shape and each other variant on the first seed, so
the seed variants share one row ("default shape") and the grid stays compact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelproof.report import formatting as fmt
from kernelproof.schema import Correctness, CorrectnessTest, TestOutcome, VariantKind

#: Row order of variant kinds: the default inputs first, then what changes least to most.
KIND_ORDER = (
    VariantKind.SEED,
    VariantKind.REPEAT,
    VariantKind.VALUE,
    VariantKind.LAYOUT,
    VariantKind.SHAPE,
)

#: Label of the row that gathers the seed variants.
DEFAULT_ROW = "default shape"

#: A passing cell whose error ratio exceeds this fraction of the tolerance factor is flagged
#: as close to the limit: it passed, but a reviewer should know it was near.
NEAR_LIMIT_FRACTION = 0.5


@dataclass(frozen=True)
class Cell:
    """One matrix cell as the packet shows it."""

    outcome: TestOutcome
    ratio: str
    """The worst output's error ratio, formatted ("" when outputs were not compared)."""

    name: str
    """The variant's full name, e.g. ``shape:dim=4097``."""

    message: str
    near_limit: bool = False

    @property
    def text(self) -> str:
        """What the cell shows: the error ratio, or the outcome where a ratio says nothing (a
        non-finite output fails with a ratio of 0)."""
        if self.outcome is TestOutcome.PASSED and self.ratio:
            return self.ratio
        if self.outcome is TestOutcome.FAILED and self.ratio and self.ratio != "0":
            return self.ratio
        return self.outcome.value

    @property
    def css(self) -> str:
        return self.outcome.value + (" near" if self.near_limit else "")


@dataclass
class Row:
    label: str
    kind: str
    cells: dict[int, Cell] = field(default_factory=dict)
    """Seed -> cell; a seed the row did not run on has no cell."""

    @property
    def failing(self) -> bool:
        return any(c.outcome is not TestOutcome.PASSED for c in self.cells.values())


@dataclass(frozen=True)
class MatrixView:
    seeds: list[int]
    rows: list[Row]
    counts: dict[str, int]
    """Outcome -> number of cells, for the legend."""

    tests: list[CorrectnessTest]
    """Every cell in run order, for the detail table."""

    near_limit: int = 0
    """Passing cells whose error ratio is over :data:`NEAR_LIMIT_FRACTION` of the limit."""

    worst_passing: str = ""
    """The largest error ratio among passing cells, formatted ("" when none was compared)."""


def matrix_view(correctness: Correctness) -> MatrixView:
    """Lay ``correctness`` out as rows (variants) by columns (seeds)."""
    factor = correctness.tolerance.get("factor")
    seeds = list(correctness.seeds)
    rows: dict[tuple[int, str], Row] = {}
    for test in correctness.tests:
        kind = test.variant.kind
        label = DEFAULT_ROW if kind is VariantKind.SEED else test.variant.name
        order = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
        row = rows.setdefault((order, label), Row(label=label, kind=kind.value))
        row.cells[test.seed] = _cell(test, factor)
        if test.seed not in seeds:
            seeds.append(test.seed)
    ordered = [rows[key] for key in sorted(rows, key=lambda key: key[0])]
    counts = {o.value: sum(1 for t in correctness.tests if t.outcome is o) for o in TestOutcome}
    near = sum(1 for row in ordered for c in row.cells.values() if c.near_limit)
    passing = [
        t.error_ratio
        for t in correctness.tests
        if t.outcome is TestOutcome.PASSED and t.error_ratio is not None
    ]
    return MatrixView(
        seeds=seeds,
        rows=ordered,
        counts=counts,
        tests=list(correctness.tests),
        near_limit=near,
        worst_passing=fmt.ratio(max(passing)) if passing else "",
    )


def _cell(test: CorrectnessTest, factor: object) -> Cell:
    near = (
        test.outcome is TestOutcome.PASSED
        and test.error_ratio is not None
        and isinstance(factor, (int, float))
        and test.error_ratio > NEAR_LIMIT_FRACTION * factor
    )
    return Cell(
        outcome=test.outcome,
        ratio=fmt.ratio(test.error_ratio),
        name=test.variant.name,
        message=test.message,
        near_limit=near,
    )
