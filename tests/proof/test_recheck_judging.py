"""What ``recheck`` decides for each report of a folder, before verifying anything (--dry-run):
invalidated exactly where the rule says, old files never touched, bad files named."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kernelproof.controller.environment import collect_environment
from kernelproof.proof.probe import matrix_thread_count
from kernelproof.schema import (
    Artifact,
    CodeFacts,
    Correctness,
    CorrectnessTest,
    InputVariant,
    Report,
    TestOutcome,
    VariantKind,
    Verdict,
)
from kernelproof.schema.recheck import RecheckExitCode, RecheckStatus
from kernelproof.suite.recheck import RecheckOptions, recheck

SETTINGS = {"device": "cpu", "seeds": 2, "threads": None, "timing": False}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_text().encode()).hexdigest()


def _report(folder: Path, name: str, **environment: object) -> Path:
    """A verified report of folder/candidate.py against folder/task.py, proved here."""
    env = collect_environment("cpu", 1, matrix_thread_count("cpu", None))
    env = env.model_copy(update=environment)
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    report = Report(
        verdict=Verdict.VERIFIED,
        environment=env,
        settings=dict(SETTINGS),
        correctness=Correctness(
            seeds=[1],
            base_seed=7,
            default_knobs={},
            task_knobs={},
            tolerance={"mode": "oracle"},
            tests=[CorrectnessTest(variant=variant, seed=1, outcome=TestOutcome.PASSED)],
        ),
        candidate=Artifact(path="candidate.py", sha256=_sha(folder / "candidate.py")),
        reference=Artifact(path="task.py", sha256=_sha(folder / "task.py")),
        code=CodeFacts(languages=["pytorch"]),
    )
    path = folder / f"{name}.json"
    path.write_text(report.to_json())
    return path


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "task.py").write_text("# a task\n")
    (tmp_path / "candidate.py").write_text("# a candidate\n")
    return tmp_path


def _dry(folder: Path, **options: object):
    report = recheck(RecheckOptions(source=folder, dry_run=True, **options))
    return {Path(item.key).name: item for item in report.items}, report


def test_only_the_edited_report_is_invalidated_and_nothing_is_written(folder: Path) -> None:
    same = _report(folder, "same")
    edited = _report(folder, "edited")
    data = json.loads(edited.read_text())
    data["environment"]["versions"]["torch"] = "2.12.0+cpu"
    edited.write_text(json.dumps(data))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    items, report = _dry(folder)
    assert items["same.json"].status is RecheckStatus.STILL_VALID
    assert items["edited.json"].status is RecheckStatus.PENDING
    [change] = items["edited.json"].diff.invalidating
    assert (change.component, change.proved) == ("torch", "2.12.0+cpu")
    assert report.exit_code is RecheckExitCode.HOLDS and report.dry_run
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert same.exists()


def test_a_changed_source_and_another_thread_count_invalidate(folder: Path) -> None:
    _report(folder, "proof")
    (folder / "candidate.py").write_text("# a candidate, edited after it was proved\n")
    items, _ = _dry(folder)
    [change] = items["proof.json"].diff.invalidating
    assert change.component == "candidate"
    (folder / "candidate.py").write_text("# a candidate\n")
    assert _dry(folder)[0]["proof.json"].status is RecheckStatus.STILL_VALID
    threads = _dry(folder, threads=3)[0]["proof.json"]
    assert [c.component for c in threads.diff.invalidating] == ["threads"]
    assert _dry(folder, threads=1)[0]["proof.json"].status is RecheckStatus.STILL_VALID


def test_an_older_report_a_missing_source_and_a_bad_file_are_named(folder: Path) -> None:
    older = _report(folder, "older")
    data = json.loads(older.read_text())
    for key in ("fingerprint_schema", "isa", "arch", "cpu_model", "matrix_threads"):
        data["environment"].pop(key)
    older.write_text(json.dumps(data))
    gone = _report(folder, "gone", versions={"torch": "2.12.0+cpu"})
    data = json.loads(gone.read_text())
    data["candidate"]["path"] = "deleted.py"
    gone.write_text(json.dumps(data))
    (folder / "notes.json").write_text('{"not": "a report"}')
    (folder / "truncated.json").write_text('{"schema": "kernelproof.report/1", "verd')
    items, report = _dry(folder)
    assert items["older.json"].status is RecheckStatus.PENDING
    assert not items["older.json"].diff.proved_recorded
    assert items["gone.json"].status is RecheckStatus.FAILED
    assert "candidate file deleted.py is not found here" in items["gone.json"].message
    assert report.exit_code is RecheckExitCode.ERROR
    assert sorted(Path(s.split(":")[0]).name for s in report.skipped) == [
        "notes.json",
        "truncated.json",
    ]
    assert all("not a kernelproof report" in s for s in report.skipped)


def test_the_change_report_renders_in_the_terminal_and_as_a_page(folder: Path) -> None:
    from rich.console import Console

    from kernelproof.report.recheck_html import render_recheck_html
    from kernelproof.report.recheck_text import render_recheck

    edited = _report(folder, "edited")
    data = json.loads(edited.read_text())
    data["environment"]["versions"]["torch"] = "2.12.0+cpu"
    edited.write_text(json.dumps(data))
    _report(folder, "same")
    _, report = _dry(folder)
    console = Console(record=True, width=200)
    render_recheck(report, console)
    text = console.export_text()
    assert "torch 2.12.0+cpu -> " in text and "pending" in text and "still-valid" in text
    assert "1 pending; none lost verified (exit 0)" in text
    page = render_recheck_html(report)
    assert 'data-status="pending"' in page and 'data-status="still-valid"' in page
    assert "(dry run: nothing was verified)" in page and "<script" not in page
