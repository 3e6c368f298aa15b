"""The guard refuses to serve a candidate outside the environment it was proved in: every call
goes to the reference, one incident names the difference and the recheck command, and the
opt-in shadow-only mode still compares sampled calls without ever returning the candidate's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import kernelproof
from kernelproof.dispatch import EnvironmentMismatchWarning, GuardError
from kernelproof.dispatch.incidents import read_incidents
from kernelproof.schema import Report
from kernelproof.tasks.module import import_file

from .conftest import GUARD_EXAMPLES, synthetic_report

Build = Callable[[str], torch.nn.Module]


def _upgraded(report: Report, tmp_path: Path, **versions: str) -> Path:
    """The report as JSON with some versions edited: a report from another environment."""
    data = json.loads(report.to_json())
    data["environment"]["versions"].update(versions)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return path


def _bomb(example: Build) -> Any:
    bomb = example("time_bomb")
    bomb.goes_wrong_after = 0  # 1% off from its first call
    return bomb


def test_another_torch_routes_every_call_to_the_reference_with_one_incident(
    example: Build, tmp_path: Path
) -> None:
    path = _upgraded(synthetic_report(), tmp_path, torch="2.99.0+cpu")
    seen: list[Any] = []
    with pytest.warns(EnvironmentMismatchWarning, match=r"torch 2\.99\.0\+cpu -> "):
        guarded = kernelproof.guard(
            _bomb(example),
            example("reference"),
            path,
            shadow_rate=1.0,
            incident_dir=tmp_path / "incidents",
            on_incident=seen.append,
        )
    for batch in (64, 100, 64, 7):
        x = torch.randn(batch, 256)
        assert torch.equal(guarded(x), torch.softmax(x, -1))  # never the candidate's answer
    stats = guarded.stats
    assert stats["outside_environment"] and not stats["shadow_only"]
    assert (
        stats["calls"],
        stats["reference_calls"],
        stats["candidate_calls"],
        stats["shadow_checks"],
    ) == (4, 4, 0, 0)
    [(folder, incident)] = read_incidents(tmp_path / "incidents")
    assert seen == [incident] == guarded.incidents
    assert incident.kinds[0].value == "environment" and incident.signature is None
    assert incident.command == f"kernelproof recheck {path}"
    assert "torch" in [c.component for c in incident.environment if c.effect.value == "invalidates"]
    assert "environment" in folder.name and "kernelproof recheck" in incident.detail
    assert not guarded.environment.diff.annotations or all(
        c.component != "torch" for c in guarded.environment.diff.annotations
    )


def test_shadow_only_compares_sampled_calls_and_never_returns_the_candidate(
    example: Build, tmp_path: Path
) -> None:
    path = _upgraded(synthetic_report(), tmp_path, torch="2.99.0+cpu")
    with pytest.warns(EnvironmentMismatchWarning, match="shadow-only"):
        guarded = kernelproof.guard(
            _bomb(example),
            example("reference"),
            path,
            shadow_rate=1.0,
            on_mismatch="log",
            on_environment_change="shadow-only",
        )
    for seed in range(5):
        x = torch.randn(64, 256, generator=torch.Generator().manual_seed(seed))
        pristine = x.clone()
        assert torch.equal(guarded(x), torch.softmax(pristine, -1))
        assert torch.equal(x, pristine)
    stats = guarded.stats
    assert stats["shadow_only"] and stats["candidate_calls"] == 0
    assert stats["shadow_checks"] == 5 == stats["mismatches"]
    kinds = [incident.kinds[0].value for incident in guarded.incidents]
    assert kinds == ["environment"] + ["mismatch"] * 5


def test_shadow_only_rolls_back_to_comparing_nothing_on_its_first_mismatch(
    example: Build, tmp_path: Path
) -> None:
    path = _upgraded(synthetic_report(), tmp_path, torch="2.99.0+cpu")
    with pytest.warns(EnvironmentMismatchWarning):
        guarded = kernelproof.guard(
            _bomb(example),
            example("reference"),
            path,
            shadow_rate=1.0,
            on_environment_change="shadow-only",
        )
    for _ in range(4):
        guarded(torch.randn(64, 256))
    assert guarded.stats["rolled_back"] and guarded.stats["shadow_checks"] == 1


def test_a_candidate_whose_source_changed_since_its_proof_does_not_serve(
    example: Build, tmp_path: Path
) -> None:
    source = tmp_path / "bomb.py"
    source.write_text((GUARD_EXAMPLES / "time_bomb.py").read_text())
    report = synthetic_report(candidate=source)
    source.write_text(source.read_text() + "\n# edited after it was verified\n")
    candidate = import_file(str(source), "edited_time_bomb").ModelNew()
    with pytest.warns(EnvironmentMismatchWarning, match="candidate .* -> .*invalidates"):
        guarded = kernelproof.guard(candidate, example("reference"), report)
    assert guarded.stats["outside_environment"]
    assert guarded.environment.candidate_source == str(source.resolve())


def test_an_older_report_without_a_fingerprint_is_named_as_such(example: Build) -> None:
    report = synthetic_report()
    older = report.model_copy(
        update={
            "environment": report.environment.model_copy(
                update={"fingerprint_schema": None, "isa": None, "arch": ""}
            )
        }
    )
    with pytest.warns(EnvironmentMismatchWarning, match="predates environment fingerprints"):
        guarded = kernelproof.guard(example("time_bomb"), example("reference"), older)
    assert guarded.stats["outside_environment"]
    assert "kernelproof verify" in guarded.incidents[0].command  # no report file: re-verify


def test_threads_serve_at_the_proved_count_and_at_one_only(example: Build) -> None:
    report = synthetic_report()
    proved = int(report.environment.matrix_threads or 1)
    for threads, serves in ((1, True), (proved, True), (proved + 2, False)):
        torch.set_num_threads(threads)
        with pytest.warns(EnvironmentMismatchWarning) if not serves else _no_warning():
            guarded = kernelproof.guard(example("time_bomb"), example("reference"), report)
        assert guarded.stats["outside_environment"] is not serves, threads


class _no_warning:
    def __enter__(self) -> None:
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("error", EnvironmentMismatchWarning)

    def __exit__(self, *exc: object) -> None:
        self._catch.__exit__(*exc)


def test_bad_environment_options_are_refused_with_the_fix(example: Build) -> None:
    report = synthetic_report()
    with pytest.raises(GuardError, match="not a policy; pass one of 'reference'"):
        kernelproof.guard(
            example("time_bomb"), example("reference"), report, on_environment_change="ignore"
        )
    with pytest.raises(GuardError, match="shadow_rate=0 compares nothing"):
        kernelproof.guard(
            example("time_bomb"),
            example("reference"),
            report,
            shadow_rate=0.0,
            on_environment_change="shadow-only",
        )


def test_the_environment_incident_is_listed_and_refuses_a_replay(
    example: Build, tmp_path: Path
) -> None:
    path = _upgraded(synthetic_report(), tmp_path, torch="2.99.0+cpu")
    with pytest.warns(EnvironmentMismatchWarning):
        kernelproof.guard(
            example("time_bomb"), example("reference"), path, incident_dir=tmp_path / "incidents"
        )
    command = [sys.executable, "-m", "kernelproof.cli", "incidents", str(tmp_path / "incidents")]
    listing = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0 and "environment" in listing.stdout
    assert "start-up" in listing.stdout
    replay = subprocess.run(
        command + ["--replay", "latest"], capture_output=True, text=True, timeout=120
    )
    said = " ".join(replay.stdout.split())  # the terminal wraps long lines
    assert replay.returncode == 4
    assert "about the environment, not a call" in said and "kernelproof recheck" in said
