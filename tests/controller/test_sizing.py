"""Sizing against the budget: stress variants and ``--stress-shapes``, with a stand-in worker
pair whose meta-device estimate is bytes = 4 * n * m."""

from __future__ import annotations

from typing import Any

from kernelproof.config import resolve_settings
from kernelproof.controller.sizing import largest_fitting, past_32_bits, within_budget
from kernelproof.tasks.variants import plan_matrix
from kernelproof.protocol.messages import Phase, WorkerReply
from kernelproof.workers.process import Response
from kernelproof.protocol.requests import PlanRequest


class _Pair:
    """Answers ``plan`` requests as the reference worker would, from a formula."""

    def __init__(self, sizeable: bool = True) -> None:
        self.sizeable = sizeable
        self.asked: list[dict[str, int]] = []

    def ask_reference(self, request: PlanRequest) -> Any:
        knobs = request.knobs
        self.asked.append(knobs)
        data = {"ok": self.sizeable, "bytes": 4.0 * knobs["n"] * knobs["m"], "flops": 0.0}
        return Response(reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data),
                        reply_model=request.reply_model)


def test_largest_fitting_finds_the_budget_edge_within_a_sixteenth():
    settings = resolve_settings(overrides={"max_call_bytes": 4 * 1000 * 300})
    largest = largest_fitting(_Pair(), {"n": 10, "m": 1000}, "n", settings)  # type: ignore[arg-type]
    assert largest is not None and 300 * 15 / 16 <= largest <= 300


def test_largest_fitting_gives_up_when_double_does_not_fit_or_size_is_unknown():
    settings = resolve_settings(overrides={"max_call_bytes": 4 * 1000 * 15})
    assert largest_fitting(_Pair(), {"n": 10, "m": 1000}, "n", settings) is None  # type: ignore[arg-type]
    settings = resolve_settings()
    assert largest_fitting(_Pair(sizeable=False), {"n": 1, "m": 1}, "n", settings) is None  # type: ignore[arg-type]


def test_unknown_sizes_fit_ordinary_variants_but_not_stress_ones():
    settings = resolve_settings()
    pair = _Pair(sizeable=False)
    assert within_budget(pair, {"n": 1, "m": 1}, settings)  # type: ignore[arg-type]
    assert not within_budget(pair, {"n": 1, "m": 1}, settings, unknown_fits=False)  # type: ignore[arg-type]


class _GpuPair:
    """Meta estimates of an (n, m) float32 input and output on a device with ``free`` bytes."""

    def __init__(self, free: float, grows: tuple[str, ...] = ("n", "m")) -> None:
        self.free = free
        self.grows = grows

    def ask_reference(self, request: PlanRequest) -> Any:
        knobs = request.knobs
        elements = 1
        for name in self.grows:
            elements *= knobs[name]
        data = {"ok": True, "bytes": 8.0 * elements, "flops": 0.0,
                "largest_tensor_elements": float(elements), "device_free_bytes": self.free}
        return Response(reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data),
                        reply_model=request.reply_model)


def test_past_32_bits_is_the_smallest_size_whose_tensor_passes_2_to_the_31():
    settings = resolve_settings(overrides={"memory_limit_gib": 100.0})
    found = past_32_bits(_GpuPair(free=140e9), {"n": 1000, "m": 4096}, "n", settings)  # type: ignore[arg-type]
    assert found is not None and found.fits
    assert found.value * 4096 > 2**31 >= (found.value - 1) * 4096


def test_past_32_bits_says_when_the_device_or_host_cannot_hold_it():
    small_device = past_32_bits(_GpuPair(free=16e9), {"n": 1000, "m": 4096}, "n",  # type: ignore[arg-type]
                                resolve_settings(overrides={"memory_limit_gib": 100.0}))
    assert small_device is not None and not small_device.fits
    assert "2**31" in small_device.skipped_text()
    small_host = past_32_bits(_GpuPair(free=140e9), {"n": 1000, "m": 4096}, "n",  # type: ignore[arg-type]
                              resolve_settings(overrides={"memory_limit_gib": 8.0}))
    assert small_host is not None and not small_host.fits


def test_past_32_bits_is_not_tried_on_the_cpu_or_for_a_knob_that_sizes_nothing():
    settings = resolve_settings(overrides={"memory_limit_gib": 100.0})
    assert past_32_bits(_Pair(), {"n": 10, "m": 1000}, "n", settings) is None  # type: ignore[arg-type]
    assert past_32_bits(_GpuPair(free=140e9, grows=("n",)), {"n": 1000, "m": 3}, "m",  # type: ignore[arg-type]
                        settings) is None


def test_the_matrix_runs_a_past_32_bits_size_as_a_device_sized_stress_variant():
    settings = resolve_settings()
    groups = plan_matrix({"n": 1000, "m": 4096}, [], [1, 2], settings,
                         past_32_bits={"n": 524289})
    wide = [g for g in groups if g.knobs["n"] == 524289]
    assert len(wide) == 1 and wide[0].stress and wide[0].device_sized
    assert not any(g.device_sized for g in groups if g is not wide[0])
