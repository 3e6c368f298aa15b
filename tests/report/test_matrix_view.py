"""The matrix grid: variants by seeds, seed variants in one row, kinds in a fixed order."""

from __future__ import annotations

from kernelproof.report.matrix_view import DEFAULT_ROW, matrix_view
from kernelproof.schema import TestOutcome


def test_rows_and_columns(full_report):
    view = matrix_view(full_report.correctness)
    assert view.seeds == [11, 22]
    labels = [row.label for row in view.rows]
    assert labels[0] == DEFAULT_ROW
    assert labels[1:3] == ["value:scale-1e3", "layout:non-contiguous"]
    assert set(view.rows[0].cells) == {11, 22}
    assert view.counts["failed"] == 2 and view.counts["passed"] == 3


def test_cell_text_and_flags(full_report):
    view = matrix_view(full_report.correctness)
    cells = {c.name: c for row in view.rows for c in row.cells.values()}
    assert cells["shape:dim=4097"].text == "126"
    assert cells["shape:dim=1"].text == "failed"
    assert cells["layout:non-contiguous"].text == "raised"
    assert cells["seed:1"].near_limit and cells["seed:1"].css == "passed near"
    failing = {row.label for row in view.rows if row.failing}
    assert failing == {"layout:non-contiguous", "shape:dim=4097", "shape:dim=1", "shape:dim=8192"}
    assert all(c.outcome is TestOutcome.PASSED for c in view.rows[0].cells.values())
