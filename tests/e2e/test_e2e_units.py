"""The parts of the e2e check that need no worker: parsing, static checks, generated sources,
the substitution helpers (on trusted test modules) and the Amdahl arithmetic."""

from __future__ import annotations

import pytest
import torch

from kernelproof.e2e.amdahl import explain, judge, predicted_speedup
from kernelproof.e2e.envelope import (
    FULL_SEED_CHECKS,
    FULL_SEEDS,
    SIGNATURES_PER_VERIFICATION,
    plan_checks,
)
from kernelproof.e2e.generated import CALL_BASE, HostFiles, module_task, signatures_task
from kernelproof.e2e.growth import growth_finding, judge_growth
from kernelproof.e2e.host_runtime import build_substituted, load_host, tensor_in_order
from kernelproof.e2e.replacement import Replacement, constructor_mismatch
from kernelproof.e2e.soak import cuda_findings
from kernelproof.e2e.soak_shrink import REJECTED, shrink_drift
from kernelproof.e2e.speed import dominant_signature
from kernelproof.e2e.trace_record import InstanceTrace, TargetTrace
from kernelproof.errors import UsageError
from kernelproof.schema import Verdict
from kernelproof.schema.e2e import AmdahlRow, SignatureCoverage, Soak, Speed
from kernelproof.schema.envelope import CallSignature
from kernelproof.tasks.source import parse_task

HOST = """
import torch
import torch.nn as nn

hidden = 8


class Norm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.first = Norm(hidden)
        self.second = Norm(hidden, eps=1e-5)

    def forward(self, x):
        return self.second(self.first(x))


def get_inputs():
    return [torch.randn(2, hidden)]


def get_init_inputs():
    return [hidden]
"""


def test_replace_parses_target_candidate_and_task() -> None:
    parsed = Replacement.parse("blocks.0.norm=cand.py:task.py")
    assert (parsed.target, str(parsed.candidate), str(parsed.task)) == (
        "blocks.0.norm",
        "cand.py",
        "task.py",
    )
    assert Replacement.parse("RMSNorm=cand.py").task is None


@pytest.mark.parametrize("text", ["cand.py", "=cand.py", "RMSNorm="])
def test_a_malformed_replace_says_what_to_write(text: str) -> None:
    with pytest.raises(UsageError, match="TARGET=CANDIDATE"):
        Replacement.parse(text)


def test_constructor_mismatch_names_both_signatures() -> None:
    candidate = "class ModelNew:\n    def __init__(self, dim, heads):\n        pass\n"
    problem = constructor_mismatch(candidate, [64], "RMSNorm(self, hidden, eps=1e-06)")
    assert problem is not None
    assert "ModelNew(dim, heads)" in problem and "RMSNorm(self, hidden, eps=1e-06)" in problem
    assert constructor_mismatch(candidate, [64, 4], "X(self, a, b)") is None
    assert (
        constructor_mismatch(
            "class ModelNew:\n    def __init__(self, *a):\n        pass\n",
            [1, 2, 3],
            "X(self, a, b, c)",
        )
        is None
    )
    # What the source alone does not decide (a decorator, a __new__) is left to the worker.
    decorated = "@wrap\nclass ModelNew:\n    def __init__(self, dim, heads):\n        pass\n"
    assert constructor_mismatch(decorated, [64], "X(self, a)") is None
    with_new = candidate + "    def __new__(cls, *a):\n        pass\n"
    assert constructor_mismatch(with_new, [64], "X(self, a)") is None


def test_substitution_hands_each_instance_its_own_arguments_and_state() -> None:
    host = load_host(HOST, "host.py")
    seen = []

    class Replacement_(torch.nn.Module):
        def __init__(self, hidden, eps=1e-6):
            super().__init__()
            seen.append((hidden, eps))
            self.weight = torch.nn.Parameter(torch.zeros(hidden))

        def forward(self, x):
            return x * self.weight

    model = build_substituted(host, [8], [("Norm", Replacement_)])
    assert seen == [(8, 1e-6), (8, 1e-5)]
    assert isinstance(model.first, Replacement_) and isinstance(model.second, Replacement_)
    assert torch.equal(model.first.weight, torch.ones(8))  # the host's state, not its own


def test_a_candidate_whose_state_does_not_match_is_told_both_names() -> None:
    host = load_host(HOST, "host.py")

    class Renamed(torch.nn.Module):
        def __init__(self, hidden, eps=1e-6):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(hidden))

    with pytest.raises(TypeError, match=r"lacks \['weight'\] and has \['scale'\]"):
        build_substituted(host, [8], [("first", Renamed)])


def test_an_unknown_target_lists_what_the_host_has() -> None:
    host = load_host(HOST, "host.py")
    with pytest.raises(LookupError, match="its classes are Norm"):
        build_substituted(host, [8], [("LayerNorm", torch.nn.Identity)])


def _trace(tmp_path) -> TargetTrace:
    calls = tmp_path / "calls.pt"
    torch.save(
        {"calls": [], "states": {"first": {"weight": torch.ones(8)}}, "init": {"first": [8, 1e-6]}},
        calls,
    )
    signature = CallSignature.of([torch.randn(2, 8).t()])
    return TargetTrace(
        target="Norm",
        class_name="Norm",
        class_module="host",
        init_signature="Norm(self, hidden, eps=1e-06)",
        init_parameters=["hidden", "eps"],
        instances=[InstanceTrace(path="first", init_args=[8, 1e-6], init_repr="[8, 1e-06]")],
        signatures=[signature],
        signature_counts=[1],
        signature_sources=["seed:0"],
        signature_init=["[8, 1e-06]"],
        calls_file=str(calls),
    )


def test_the_module_task_ties_sizes_to_constructor_arguments(tmp_path) -> None:
    trace = _trace(tmp_path)
    text = module_task(HostFiles(path=tmp_path / "host.py", text=HOST), trace)
    task = parse_task(text, tmp_path / "module.py")
    # The host called it with an (8, 2) transposed view: the size 8 is the constructor's
    # hidden (one knob for both), 2 a knob of its own; the host's own knob stays inside the
    # embedded host source. The task poses contiguous inputs, as a benchmark would.
    assert task.default_knobs == {"hidden": 8, "input0_dim1": 2}
    namespace: dict = {}
    exec(compile(task.render({"hidden": 5}), str(tmp_path / "module.py"), "exec"), namespace)
    (x,) = namespace["get_inputs"]()
    assert x.shape == (5, 2) and x.is_contiguous()
    assert namespace["get_init_inputs"]() == [5, 1e-6]


def test_the_signatures_task_rebuilds_each_exact_signature(tmp_path) -> None:
    trace = _trace(tmp_path)
    other = CallSignature.of([torch.randn(3, 4, 8)[:, ::2]])
    text = signatures_task(
        HostFiles(path=tmp_path / "host.py", text=HOST),
        trace,
        [(trace.signatures[0], "[8, 1e-06]"), (other, "[4, 1e-05]")],
    )
    task = parse_task(text, tmp_path / "signatures.py")
    assert task.default_knobs == {"signature": CALL_BASE}
    assert task.shapes == [{"signature": CALL_BASE + 1}]
    for index, (signature, init) in enumerate(
        [(trace.signatures[0], [8, 1e-6]), (other, [4, 1e-5])]
    ):
        namespace: dict = {}
        source = task.render({"signature": CALL_BASE + index})
        exec(compile(source, str(tmp_path / "signatures.py"), "exec"), namespace)  # test text
        assert CallSignature.of(namespace["get_inputs"]()) == signature
        assert namespace["get_init_inputs"]() == init
    assert tensor_in_order((2, 3, 4), (0, 2, 1), "float32").stride() == (12, 1, 3)


def test_the_shortfall_is_blamed_on_the_host_signature_only_with_its_timing() -> None:
    def speed(at_host: float | None, measured: float, share: float = 0.4) -> Speed:
        row = AmdahlRow(
            target="act",
            share=share,
            share_source="profiler",
            share_profiler=share,
            share_hooks=share,
            isolated_speedup=2.4,
            host_signature="(float32[4, 512] strides=[1024, 1]@cpu)",
            host_signature_calls=60,
            host_signature_speedup=at_host,
            host_signature_speedup_ci=None if at_host is None else (at_host - 0.05, at_host + 0.05),
        )
        return judge(
            Speed(
                rows=[row],
                measured_speedup=measured,
                measured_speedup_ci=(measured - 0.03, measured + 0.03),
            )
        )

    slow = speed(0.6, 0.82)
    assert slow.shortfall and slow.cause == "host-signature"
    assert slow.predicted_at_host_signatures == pytest.approx(1 / (0.6 + 0.4 / 0.6))
    assert "0.60x the module" in slow.explanation and "not 2.40x" in slow.explanation
    kept = speed(2.3, 0.9)
    assert kept.shortfall and kept.cause == "host-work"
    assert "2.30x at the host's signature" in kept.explanation
    assert speed(None, 0.9).cause == "host-work"
    held = speed(2.3, 1.3)
    assert not held.shortfall and held.cause == "none"
    assert speed(None, 1.01, share=0.05).cause == "amdahl"


def test_profiler_and_hook_shares_that_disagree_are_said() -> None:
    row = AmdahlRow(
        target="act",
        share=0.1,
        share_source="profiler",
        share_profiler=0.1,
        share_hooks=0.4,
        isolated_speedup=2.0,
    )
    speed = judge(Speed(rows=[row]))
    assert speed.shares_disagree
    assert "act 10% by the profiler, 40% by the forward hooks" in speed.explanation
    close = row.model_copy(update={"share_hooks": 0.12})
    assert not judge(Speed(rows=[close])).shares_disagree
    hooks_only = AmdahlRow(target="act", share=0.4, share_hooks=0.4, isolated_speedup=2.0)
    failed = judge(Speed(rows=[hooks_only], profiler_error="RuntimeError: no events"))
    assert "(forward hooks; the profiler failed: RuntimeError: no events)" in failed.explanation


def test_every_uncovered_signature_is_planned_once_the_first_with_full_seeds() -> None:
    rows = [
        SignatureCoverage(
            signature=CallSignature.of([torch.empty(rows_, 8)]),
            calls=1,
            first_seen="seed:0",
            covered=False,
            check="not-checked",
        )
        for rows_ in range(1, 301)
    ]
    plan = plan_checks(rows)
    planned = [row for batch, _ in plan for row in batch]
    assert sorted(id(r) for r in planned) == sorted(id(r) for r in rows)
    assert all(len(batch) <= SIGNATURES_PER_VERIFICATION for batch, _ in plan)
    assert [seeds for _, seeds in plan] == [FULL_SEEDS, 1, 1, 1]
    assert len(plan[0][0]) == FULL_SEED_CHECKS
    assert plan[0][0][0].signature.args[0].shape == (300, 8)  # the largest first


def test_the_dominant_signature_weighs_calls_by_elements(tmp_path) -> None:
    trace = _trace(tmp_path)
    big = CallSignature.of([torch.randn(64, 8)])
    trace = trace.model_copy(
        update={"signatures": [trace.signatures[0], big], "signature_counts": [10, 2]}
    )
    assert dominant_signature(trace) == (1, big)  # 2 x 512 elements over 10 x 16
    assert dominant_signature(trace.model_copy(update={"signatures": []})) is None


def test_amdahl_predicts_and_explains_a_vanished_speedup() -> None:
    rows = [AmdahlRow(target="act", share=0.2, isolated_speedup=2.5)]
    predicted = predicted_speedup(rows)
    assert predicted == pytest.approx(1 / (0.8 + 0.2 / 2.5))
    speed = judge(Speed(rows=rows, measured_speedup=1.01, measured_speedup_ci=(0.98, 1.04)))
    assert speed.predicted_speedup == pytest.approx(predicted) and speed.shortfall
    text = speed.explanation
    assert text == explain(speed)
    assert "2.50x in isolation" in text and "predicts 1.14x" in text and "measured 1.01x" in text
    assert "does not carry over" in text and speed.cause == "host-work"
    assert predicted_speedup([AmdahlRow(target="act", share=0.2)]) is None


MiB = 1 << 20


def test_device_memory_growth_is_broken_with_rate_and_failure_step() -> None:
    steps = 64
    # Recorded per-step figures, as a CUDA worker reports them: the candidate keeps 1 MiB per
    # step, the reference holds steady; an 80 GiB device.
    candidate = [512 * MiB + step * MiB for step in range(steps)]
    reference = [512 * MiB + (step % 3) * 4096 for step in range(steps)]
    growth = judge_growth(candidate, reference, 80 << 30)
    assert growth is not None
    assert growth.slopes["excess"] == pytest.approx(MiB, rel=0.01)
    assert growth.projected_failure_step == pytest.approx(
        steps + ((80 << 30) - candidate[-1]) / MiB, abs=2
    )
    finding = growth_finding(growth, "CUDA allocated memory", steps)
    assert (
        finding.forces is Verdict.BROKEN
        and "CUDA allocated memory grows by 1024 KiB" in finding.message
    )
    # A few KiB per step over a short soak is the allocator's noise.
    small = judge_growth([512 * MiB + step * 4096 for step in range(steps)], reference, 80 << 30)
    assert small.projected_failure_step is None
    assert growth_finding(small, "CUDA allocated memory", steps) is None
    assert judge_growth(candidate[:3], reference[:3], 80 << 30) is None


def test_the_soak_applies_the_rule_to_cuda_memory_and_says_when_it_does_not_apply() -> None:
    steps = 32
    flat = [256 * MiB] * steps
    growing = [256 * MiB + step * 2 * MiB for step in range(steps)]
    soak = Soak(
        steps=steps,
        loop="soak_steps",
        cuda_memory="measured",
        cuda_allocated_bytes={"candidate": flat, "reference": flat},
        cuda_reserved_bytes={"candidate": growing, "reference": flat},
        cuda_memory_limit_bytes=16 << 30,
    )
    findings = cuda_findings(soak)
    assert [f.evidence["memory"] for f in findings] == ["CUDA reserved memory"]
    assert findings[0].forces is Verdict.BROKEN
    assert soak.cuda_projected_failure_step == findings[0].evidence["projected_failure_step"]
    assert soak.cuda_growth_bytes_per_step["excess"] == pytest.approx(0.0)
    cpu = Soak(steps=steps, loop="soak_steps")
    assert cpu.cuda_memory == "not-applicable" and cuda_findings(cpu) == []


def test_the_drift_shrinker_never_grows_the_knobs_or_the_steps() -> None:
    # A fake host: drifts when hidden >= 16 and batch >= 2, by step hidden // 8; rejects an
    # odd batch.
    def first_drift(knobs: dict[str, int], steps: int) -> int | None:
        if knobs["batch"] % 2:
            return REJECTED
        if knobs["hidden"] < 16 or knobs["batch"] < 2:
            return None
        found = knobs["hidden"] // 8
        return found if found < steps else None

    repro = shrink_drift(first_drift, {"hidden": 64, "batch": 4}, 8)
    assert repro.knobs == {"hidden": 16, "batch": 2} and repro.steps == 3 and repro.shrunk
    held = shrink_drift(lambda knobs, steps: None, {"hidden": 64}, 5)
    assert held.knobs == {"hidden": 64} and held.steps == 6 and not held.shrunk
