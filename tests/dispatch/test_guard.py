"""The verified-dispatch guard: routing, shadow checks, policies, counters, incidents."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import kernelproof
from kernelproof.dispatch import CandidateMismatch, GuardError
from kernelproof.dispatch.incidents import read_incidents
from kernelproof.schema import Finding, FindingCheck, Report, Severity, Verdict
from kernelproof.tasks.saved_inputs import load_arguments

from .conftest import DEFAULT, GUARD_EXAMPLES, synthetic_report

Build = Callable[[str], torch.nn.Module]


def _x(batch: int = DEFAULT["batch_size"], seed: int = 0) -> torch.Tensor:
    return torch.randn(batch, DEFAULT["dim"], generator=torch.Generator().manual_seed(seed))


def _bomb(example: Build, after: int) -> Any:
    bomb = example("time_bomb")
    bomb.goes_wrong_after = after
    return bomb


# -- refusals ----------------------------------------------------------------------------------


def test_an_unverified_report_is_refused_with_its_verdict(report: Report, example: Build) -> None:
    incorrect = Report(
        verdict=Verdict.INCORRECT,
        environment=report.environment,
        findings=[
            Finding(check=FindingCheck.COVERAGE, severity=Severity.FAIL, message="wrong at dim=3")
        ],
        candidate=report.candidate,
        reference=report.reference,
        envelope=report.envelope,
        correctness=report.correctness,
    )
    with pytest.raises(GuardError, match="verdict is 'incorrect'.*only ships verified"):
        kernelproof.guard(example("time_bomb"), example("reference"), incorrect)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"shadow_rate": 1.5}, "not a share of calls"),
        ({"on_mismatch": "retry"}, "not a policy; pass one of 'rollback'"),
    ],
)
def test_bad_options_are_refused_with_the_fix(
    report: Report, example: Build, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(GuardError, match=message):
        kernelproof.guard(example("time_bomb"), example("reference"), report, **options)


def test_a_report_path_is_read_and_a_non_module_refused(
    report: Report, example: Build, tmp_path: Path
) -> None:
    path = tmp_path / "report.json"
    path.write_text(report.to_json())
    guarded = kernelproof.guard(example("time_bomb"), example("reference"), path)
    assert guarded(_x()).shape == _x().shape
    with pytest.raises(GuardError, match="not a torch.nn.Module"):
        kernelproof.guard(lambda x: x, example("reference"), path)


# -- routing and counters ----------------------------------------------------------------------


class Counting(torch.nn.Module):
    """Counts calls per batch size, then answers as the wrapped module does."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner
        self.batches: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.batches.append(x.shape[0])
        return self.inner(x)


def test_calls_outside_the_envelope_go_to_the_reference(example: Build) -> None:
    report = synthetic_report(candidate=GUARD_EXAMPLES / "wrong_outside.py")
    candidate = Counting(example("wrong_outside"))  # a wrapper: the verified module is inside
    guarded = kernelproof.guard(candidate, example("reference"), report, shadow_rate=0.0)
    for batch in (64, 100, 700, 5, 64):  # 100: inside the batch range; 700, 5: outside
        x = _x(batch)
        torch.testing.assert_close(guarded(x), torch.softmax(x, -1))
    strided = torch.randn(DEFAULT["dim"], 64).t()  # a layout never verified
    guarded(strided)
    guarded(_x().double())  # a dtype never verified
    assert candidate.batches == [64, 100, 64]  # the wrong path (600..1000) was never taken
    assert guarded.stats == {
        "calls": 7,
        "candidate_calls": 3,
        "reference_calls": 4,
        "out_of_envelope": 4,
        "shadow_checks": 0,
        "mismatches": 0,
        "outside_environment": False,
        "shadow_only": False,
        "rolled_back": False,
    }


def test_counters_add_up_over_many_mixed_calls(report: Report, example: Build) -> None:
    guarded = kernelproof.guard(
        example("time_bomb"), example("reference"), report, shadow_rate=0.05, seed=3
    )
    inputs = [torch.randn(b, 8) for b in (2, 3)] + [_x(64), _x(100), _x(7)]
    guarded.candidate.goes_wrong_after = 10**9
    calls = 4_000
    small_inside = 0
    for i in range(calls):
        x = inputs[i % len(inputs)]
        small_inside += x.shape == (64, 256) or x.shape == (100, 256)
        guarded(x)
    stats = guarded.stats
    assert stats["calls"] == calls == stats["candidate_calls"] + stats["reference_calls"]
    assert stats["candidate_calls"] == small_inside
    assert stats["out_of_envelope"] == stats["reference_calls"] == calls - small_inside
    # A 5% draw over 1600 calls inside: 80 expected, far from 0 and from all.
    assert 40 < stats["shadow_checks"] < 130 and stats["mismatches"] == 0


def test_counters_lose_nothing_across_serving_threads(example: Build) -> None:
    import threading

    report = synthetic_report(candidate=GUARD_EXAMPLES / "wrong_outside.py")
    guarded = kernelproof.guard(
        example("wrong_outside"), example("reference"), report, shadow_rate=0.02, seed=4
    )
    inside, outside = _x(64), torch.randn(5, 8)

    def serve() -> None:
        for i in range(500):
            guarded(inside if i % 2 else outside)

    threads = [threading.Thread(target=serve) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = guarded.stats
    assert stats["calls"] == 2000 and stats["candidate_calls"] == 1000
    assert stats["reference_calls"] == stats["out_of_envelope"] == 1000
    assert stats["mismatches"] == 0 and stats["shadow_checks"] > 0


def test_a_report_without_an_envelope_is_refused(report: Report, example: Build) -> None:
    old = report.model_copy(update={"envelope": None})
    with pytest.raises(GuardError, match="carries no envelope.*verify the candidate again"):
        kernelproof.guard(example("time_bomb"), example("reference"), old)


def test_keyword_calls_go_to_the_reference() -> None:
    class Scaled(torch.nn.Module):
        def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
            return x * scale

    report = synthetic_report(candidate=Path(__file__))  # Scaled is defined here
    guarded = kernelproof.guard(Scaled(), Scaled(), report)
    guarded(_x(), scale=2.0)
    assert guarded.stats["reference_calls"] == 1 == guarded.stats["out_of_envelope"]


# -- shadow checks and policies ----------------------------------------------------------------


def test_a_time_bomb_is_rolled_back_within_a_bounded_number_of_calls(
    report: Report, example: Build, tmp_path: Path
) -> None:
    seen: list[Any] = []
    bomb = _bomb(example, after=50)
    guarded = kernelproof.guard(
        bomb,
        example("reference"),
        report,
        shadow_rate=0.1,
        seed=11,
        incident_dir=tmp_path,
        on_incident=seen.append,
    )
    x = _x()
    for _ in range(400):
        out = guarded(x)
    stats = guarded.stats
    assert stats["rolled_back"] and stats["mismatches"] == 1 and len(seen) == 1
    # Every call after the rollback went to the reference, with the right answer.
    torch.testing.assert_close(out, torch.softmax(x, -1))
    wrong_served = bomb.calls - bomb.goes_wrong_after - 1
    # At a 10% rate the chance that 150 wrong calls go unchecked is 0.9**150 < 1e-6.
    assert 0 <= wrong_served < 150
    assert stats["candidate_calls"] == bomb.calls
    incident = seen[0]
    assert incident.kinds[0].value == "mismatch" and incident.error_ratio > 3
    assert incident.call_index == bomb.calls - 1 and incident.knobs == DEFAULT


def test_raise_policy_raises_and_log_policy_keeps_serving(report: Report, example: Build) -> None:
    raising = kernelproof.guard(
        _bomb(example, after=0), example("reference"), report, shadow_rate=1.0, on_mismatch="raise"
    )
    with pytest.raises(CandidateMismatch, match="disagreed with its reference on call 0"):
        raising(_x())
    logging = kernelproof.guard(
        _bomb(example, after=0), example("reference"), report, shadow_rate=1.0, on_mismatch="log"
    )
    for _ in range(3):
        torch.testing.assert_close(logging(_x()), torch.softmax(_x(), -1))
    assert logging.stats["mismatches"] == 3 and not logging.stats["rolled_back"]
    assert logging.stats["candidate_calls"] == 3


def test_a_mutated_input_is_caught_and_restored(example: Build) -> None:
    report = synthetic_report(candidate=GUARD_EXAMPLES / "mutates_inputs.py")
    mutating = example("mutates_inputs")
    mutating.mutates_after = 0
    guarded = kernelproof.guard(
        mutating, example("reference"), report, shadow_rate=1.0, on_mismatch="log"
    )
    kinds = []
    for call in range(1, 7):
        x = _x(seed=call)
        pristine = x.clone()
        out = guarded(x)
        torch.testing.assert_close(out, torch.softmax(pristine, -1))
        assert torch.equal(x, pristine)  # restored from the saved copy
        kinds += [k.value for i in guarded.incidents[len(kinds) :] for k in i.kinds]
    assert kinds == ["input-mutation", "input-mutation"]  # calls 3 and 6


def test_a_candidate_that_raises_is_answered_by_the_reference() -> None:
    class Fails(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("kernel launch failed")

    report = synthetic_report(candidate=Path(__file__))  # Fails is defined here
    guarded = kernelproof.guard(Fails(), torch.nn.Softmax(-1), report, shadow_rate=0.0)
    torch.testing.assert_close(guarded(_x()), torch.softmax(_x(), -1))
    assert guarded.stats["rolled_back"]
    assert "RuntimeError: kernel launch failed" in guarded.incidents[0].detail


def test_an_incident_holds_its_tensors_and_a_replay_command(
    report: Report, example: Build, tmp_path: Path
) -> None:
    guarded = kernelproof.guard(
        _bomb(example, after=0),
        example("reference"),
        report,
        shadow_rate=1.0,
        incident_dir=tmp_path,
    )
    x = _x()
    guarded(x)
    [(folder, incident)] = read_incidents(tmp_path)
    [saved] = load_arguments(folder / incident.inputs_file)
    assert torch.equal(saved, x)
    outputs = torch.load(folder / "candidate_output.pt", weights_only=True)["args"]
    torch.testing.assert_close(outputs[0], torch.softmax(x, -1) * 1.01)
    assert incident.command is not None
    assert f"--knobs batch_size=64,dim=256 --inputs {folder / 'inputs.pt'}" in incident.command
    assert incident.command.startswith(f"kernelproof verify {GUARD_EXAMPLES / 'reference.py'}")


def test_incidents_are_listed_numbered_for_replay(
    report: Report, example: Build, tmp_path: Path
) -> None:
    from rich.console import Console

    from kernelproof.report.incidents import render_incidents

    guarded = kernelproof.guard(
        _bomb(example, after=1),
        example("reference"),
        report,
        shadow_rate=1.0,
        on_mismatch="log",
        incident_dir=tmp_path,
    )
    for _ in range(3):
        guarded(_x())
    console = Console(record=True, width=200)
    render_incidents(read_incidents(tmp_path), tmp_path, console)
    text = console.export_text()
    assert "2 incident(s)" in text and text.count("mismatch") == 2
    assert "--replay N" in text


def test_fixed_tolerance_compares_with_the_reference(example: Build) -> None:
    loose = synthetic_report({"mode": "fixed", "atol": 0.1, "rtol": 0.1})
    guarded = kernelproof.guard(
        _bomb(example, after=0), example("reference"), loose, shadow_rate=1.0
    )
    guarded(_x())  # 1% off passes a 10% tolerance
    assert guarded.stats["mismatches"] == 0


@pytest.mark.slow
def test_torch_compile_of_a_model_holding_a_guard_works(report: Report, example: Build) -> None:
    guarded = kernelproof.guard(example("time_bomb"), example("reference"), report)

    class Host(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kernel = guarded

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.kernel(x * 2.0) + 1.0

    compiled = torch.compile(Host(), backend="eager")
    x = _x()
    for _ in range(3):
        torch.testing.assert_close(compiled(x), torch.softmax(x * 2.0, -1) + 1.0)
    assert guarded.stats["calls"] == 3 and guarded.stats["candidate_calls"] == 3


@pytest.mark.gpu
def test_on_cuda_the_shadow_check_runs_on_a_side_stream_and_still_rolls_back(
    example: Build,
) -> None:
    guarded = kernelproof.guard(
        _bomb(example, after=5).cuda(),
        example("reference").cuda(),
        synthetic_report(device="cuda"),
        shadow_rate=1.0,
    )
    x = _x().cuda()
    for _ in range(10):
        guarded(x)
    guarded.flush()
    assert guarded.stats["rolled_back"] and guarded.stats["mismatches"] >= 1
