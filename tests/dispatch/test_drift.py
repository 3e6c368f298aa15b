"""Production drift: the guard's log, its view (table, plot, values the matrix did not cover),
damaged lines named, and the signatures outside turned into the task's SHAPES."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import kernelproof
from kernelproof.errors import UsageError
from kernelproof.proof.drift_summary import summarise
from kernelproof.proof.shape_extension import propose_shapes, write_shapes
from kernelproof.report.drift_html import render_drift_html
from kernelproof.tasks.source import read_task

from .conftest import GUARD_EXAMPLES, synthetic_report

Build = Callable[[str], torch.nn.Module]

#: Production traffic in two windows: first mostly the default shape, then drifting to batch
#: 120 (inside the covered 32..128, near its top), 700 (past every verified size) and 7.
FIRST = [64] * 8 + [100] * 2
SECOND = [64] * 2 + [120] * 3 + [700] * 4 + [7] * 1


def _serve(example: Build, log: Path, windows: list[list[int]], **options: object) -> None:
    guarded = kernelproof.guard(
        example("time_bomb"),
        example("reference"),
        synthetic_report(),
        shadow_rate=1.0,
        drift_log=log,
        drift_window_s=3600,
        seed=1,
        **options,
    )
    for batches in windows:
        for batch in batches:
            guarded(torch.randn(batch, 256) * (1e30 if batch == 7 else 1.0))
        guarded.flush()  # the window ends


def test_the_drift_view_counts_each_dimension_per_window(example: Build, tmp_path: Path) -> None:
    log = tmp_path / "drift.jsonl"
    _serve(example, log, [FIRST, SECOND])
    summary = summarise(log)
    assert summary.calls == 20 and len(summary.windows) == 2
    assert summary.inside_envelope == 15  # 64, 100, 120: the 700s and the 7 are outside
    batch = next(d for d in summary.dimensions if d.name.startswith("batch_size"))
    assert "32..128 (a covered range)" in batch.verified
    assert [(w.inside, w.near_edge, w.outside) for w in batch.windows] == [(10, 0, 0), (2, 3, 5)]
    dim = next(d for d in summary.dimensions if "dim 1" in d.name)
    assert (dim.total.calls, dim.total.outside) == (20, 0)
    assert [(o.signature.describe(), o.calls) for o in summary.outside] == [
        ("(float32[700, 256]@cpu)", 4),
        ("(float32[7, 256]@cpu)", 1),
    ]
    # 1e30 is beyond sqrt(float32 max): huge values the synthetic matrix never tried.
    assert summary.values.sampled == 20 and summary.values.huge == 1
    assert summary.uncovered_values == [
        "1 of 20 sampled call(s) had inputs beyond the square "
        "root of the dtype's largest value: the matrix never "
        "tried"
    ]
    html = render_drift_html(summary, *propose_shapes(summary))
    assert 'data-plot="drift"' in html and "DRIFTED" in html
    assert "dict(batch_size=700, dim=256)" in html


def test_damaged_lines_are_named_and_the_rest_is_read(example: Build, tmp_path: Path) -> None:
    log = tmp_path / "drift.jsonl"
    _serve(example, log, [FIRST])
    with open(log, "a") as handle:
        handle.write('{"schema": "kernelproof.drift/1", "kind": "window", "guard"\n')  # cut
        handle.write("not json at all\n")
    _serve(example, log, [SECOND])  # a second guard appends to the same log
    summary = summarise(log)
    assert summary.calls == 20
    assert [p.split(":")[0] for p in summary.problems] == ["line 3", "line 4"]
    assert all("skipped" in p for p in summary.problems)
    result = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "guard", "report", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = " ".join(result.stdout.split())
    assert result.returncode == 0, said
    assert "damaged log line: line 3" in said and "batch_size" in said
    empty = tmp_path / "empty.jsonl"
    empty.write_text("garbage\n")
    with pytest.raises(UsageError, match="holds no guard record.*line 1"):
        summarise(empty)


def test_the_outside_signatures_become_shapes_of_the_task(example: Build, tmp_path: Path) -> None:
    log = tmp_path / "drift.jsonl"
    _serve(example, log, [SECOND])
    task = tmp_path / "task.py"
    shutil.copyfile(GUARD_EXAMPLES / "reference.py", task)
    proposals, refused = propose_shapes(summarise(log), read_task(task).shapes)
    assert [(p.knobs, p.calls) for p in proposals] == [
        ({"batch_size": 700, "dim": 256}, 4),
        ({"batch_size": 7, "dim": 256}, 1),
    ]
    assert refused == []
    shapes = write_shapes(task, proposals)
    assert read_task(task).shapes == shapes == [p.knobs for p in proposals]
    assert "SHAPES = [\n    dict(batch_size=700, dim=256),\n" in task.read_text()
    # Idempotent, and an existing SHAPES is kept first.
    assert write_shapes(task, proposals) == shapes


def test_what_a_shape_cannot_express_is_refused_with_its_reason(
    example: Build, tmp_path: Path
) -> None:
    log = tmp_path / "drift.jsonl"
    guarded = kernelproof.guard(
        example("time_bomb"),
        example("reference"),
        synthetic_report(),
        shadow_rate=0.0,
        drift_log=log,
    )
    guarded(torch.randn(64, 256).double())
    guarded(torch.randn(256, 64).t())
    guarded(torch.randn(64, 300))
    guarded.flush()
    proposals, refused = propose_shapes(summarise(log))
    reasons = {r.signature: r.reason for r in refused}
    assert proposals == []
    assert "SHAPES cannot change a dtype" in reasons["(float64[64, 256]@cpu)"]
    assert "not contiguous" in next(r for s, r in reasons.items() if "strides" in s)
    assert "every verified cell had 256" in reasons["(float32[64, 300]@cpu)"]


def test_drift_is_written_to_the_incident_folder_by_default(example: Build, tmp_path: Path) -> None:
    guarded = kernelproof.guard(
        example("time_bomb"),
        example("reference"),
        synthetic_report(),
        shadow_rate=0.0,
        incident_dir=tmp_path / "incidents",
    )
    guarded(torch.randn(64, 256))
    guarded.flush()
    lines = (tmp_path / "incidents" / "drift.jsonl").read_text().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["guard", "window"]
