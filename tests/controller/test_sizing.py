"""Sizing against the budget: stress variants and ``--stress-shapes``, with a stand-in worker
pair whose meta-device estimate is bytes = 4 * n * m."""

from __future__ import annotations

from typing import Any

from kernelproof.config import resolve_settings
from kernelproof.controller.sizing import (
    FLOAT32_EXACT_ELEMENTS,
    fit_around,
    largest_fitting,
    past_24_bits,
    past_32_bits,
    rows_past_31_bits,
    within_budget,
)
from kernelproof.protocol.messages import Phase, WorkerReply
from kernelproof.protocol.requests import PlanRequest
from kernelproof.tasks.variants import plan_matrix
from kernelproof.workers.process import Response


class _Pair:
    """Answers ``plan`` requests as the reference worker would, from a formula."""

    def __init__(self, sizeable: bool = True) -> None:
        self.sizeable = sizeable
        self.asked: list[dict[str, int]] = []

    def ask_reference(self, request: PlanRequest) -> Any:
        knobs = request.knobs
        self.asked.append(knobs)
        data = {"ok": self.sizeable, "bytes": 4.0 * knobs["n"] * knobs["m"], "flops": 0.0}
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data),
            reply_model=request.reply_model,
        )


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
        data = {
            "ok": True,
            "bytes": 8.0 * elements,
            "flops": 0.0,
            "largest_tensor_elements": float(elements),
            "device_free_bytes": self.free,
        }
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data),
            reply_model=request.reply_model,
        )


def test_past_32_bits_is_the_smallest_size_whose_tensor_passes_2_to_the_31():
    settings = resolve_settings(overrides={"memory_limit_gib": 100.0})
    found = past_32_bits(_GpuPair(free=140e9), {"n": 1000, "m": 4096}, "n", settings)  # type: ignore[arg-type]
    assert found is not None and found.fits
    assert found.value * 4096 > 2**31 >= (found.value - 1) * 4096


def test_past_32_bits_says_when_the_device_or_host_cannot_hold_it():
    small_device = past_32_bits(
        _GpuPair(free=16e9),
        {"n": 1000, "m": 4096},
        "n",  # type: ignore[arg-type]
        resolve_settings(overrides={"memory_limit_gib": 100.0}),
    )
    assert small_device is not None and not small_device.fits
    assert "2**31" in small_device.skipped_text()
    small_host = past_32_bits(
        _GpuPair(free=140e9),
        {"n": 1000, "m": 4096},
        "n",  # type: ignore[arg-type]
        resolve_settings(overrides={"memory_limit_gib": 8.0}),
    )
    assert small_host is not None and not small_host.fits


def test_past_32_bits_on_the_cpu_is_sized_by_the_workers_memory_limit():
    """No device budget on the CPU: the worker's memory limit decides, and at its default of
    8 GiB a float32 tensor of 2**31 elements (8 GiB) never fits, which the report says."""
    cpu = _GpuPair(free=None)  # type: ignore[arg-type]
    found = past_32_bits(cpu, {"n": 1000, "m": 4096}, "n", resolve_settings())  # type: ignore[arg-type]
    assert found is not None and not found.fits and found.value == 524289
    assert "device" not in found.skipped_text() and "not run" in found.skipped_text()
    roomy = resolve_settings(overrides={"memory_limit_gib": 100.0})
    assert past_32_bits(cpu, {"n": 1000, "m": 4096}, "n", roomy).fits  # type: ignore[arg-type, union-attr]


def test_past_32_bits_is_none_for_a_task_without_sizes_or_a_knob_that_sizes_nothing():
    settings = resolve_settings(overrides={"memory_limit_gib": 100.0})
    assert past_32_bits(_Pair(), {"n": 10, "m": 1000}, "n", settings) is None  # type: ignore[arg-type]
    assert (
        past_32_bits(
            _GpuPair(free=140e9, grows=("n",)),
            {"n": 1000, "m": 3},
            "m",  # type: ignore[arg-type]
            settings,
        )
        is None
    )


def test_the_matrix_runs_a_past_32_bits_size_as_a_device_sized_stress_variant():
    settings = resolve_settings()
    groups = plan_matrix({"n": 1000, "m": 4096}, [], [1, 2], settings, past_32_bits=[{"n": 524289}])
    wide = [g for g in groups if g.knobs["n"] == 524289]
    assert len(wide) == 1 and wide[0].stress and wide[0].device_sized
    assert not any(g.device_sized for g in groups if g is not wide[0])


class _EmbeddingPair:
    """Meta estimates of an embedding: a (rows, width) table, (batch, seq) ids, an output of
    (batch, seq, width) float32 values."""

    def __init__(self) -> None:
        self.asked = 0

    def ask_reference(self, request: PlanRequest) -> Any:
        self.asked += 1
        k = request.knobs
        output = k["batch_size"] * k["seq_len"] * k["embedding_dim"]
        data = {
            "ok": True,
            "flops": 0.0,
            "bytes": 4.0 * (k["num_embeddings"] * k["embedding_dim"] + output)
            + 8.0 * k["batch_size"] * k["seq_len"],
            "largest_tensor_elements": float(output),
        }
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data),
            reply_model=request.reply_model,
        )


class _RowsPair:
    """Meta estimates of a row-wise op on a (batch, seq, hidden) input with a hidden weight."""

    def __init__(self) -> None:
        self.asked = 0

    def ask_reference(self, request: PlanRequest) -> Any:
        self.asked += 1
        k = request.knobs
        elements = k["batch_size"] * k["seq_len"] * k["hidden"]
        data = {
            "ok": True,
            "flops": 0.0,
            "bytes": 8.0 * elements + 4.0 * k["hidden"],
            "largest_tensor_elements": float(elements),
        }
        return Response(
            reply=WorkerReply(ok=True, phase=Phase.PREPARE, data=data),
            reply_model=request.reply_model,
        )


EMBEDDING = {"batch_size": 16, "seq_len": 512, "num_embeddings": 131073, "embedding_dim": 512}


def test_a_size_past_16_bits_is_fitted_by_shrinking_what_sizes_the_big_tensor():
    """Level-1 Embedding's vocabulary past 16 bits needs 256 MiB at the task's width: the width
    is halved (the table's bytes), not the number of ids looked up."""
    settings = resolve_settings()
    fitted = fit_around(_EmbeddingPair(), EMBEDDING, "num_embeddings", settings)  # type: ignore[arg-type]
    assert fitted == {**EMBEDDING, "embedding_dim": 64}
    # RMSNorm-like: rows and width both size the tensor; the rows (an extent) shrink first
    pair = _RowsPair()
    rows = fit_around(
        pair, {"batch_size": 131073, "seq_len": 128, "hidden": 1024}, "batch_size", settings
    )  # type: ignore[arg-type]
    assert rows == {"batch_size": 131073, "seq_len": 1, "hidden": 32}  # 131073 * 64 * 8 > 64 MiB
    assert pair.asked <= 2 * 2 + 12 + 2  # two choices of two options, a dozen halvings
    # the pinned knob is never shrunk: nothing else left means no variant, not a smaller one
    tight = resolve_settings(overrides={"max_call_bytes": 1 << 18})
    assert fit_around(_EmbeddingPair(), EMBEDDING, "num_embeddings", tight) is None  # type: ignore[arg-type]


def test_past_24_bits_grows_the_cheapest_knob_past_float32s_exact_integers():
    settings = resolve_settings()
    pair = _EmbeddingPair()
    knobs = {**EMBEDDING, "num_embeddings": 8192}
    found = past_24_bits(pair, knobs, settings)  # type: ignore[arg-type]
    assert found is not None and found.fits
    # the output (batch * seq * width = 4,194,304 elements) passes 2**24 past 4x any of the three
    grown = {**knobs, found.name: found.value}
    assert found.name in ("batch_size", "seq_len", "embedding_dim")
    elements = grown["batch_size"] * grown["seq_len"] * grown["embedding_dim"]
    # a fifth of the elements past 2**24, so that rows start where float32 positions round
    assert FLOAT32_EXACT_ELEMENTS * 1.25 < elements <= FLOAT32_EXACT_ELEMENTS * 1.27
    assert found.name != "embedding_dim"  # growing the width grows the table too: dearer
    assert pair.asked < 20  # projected, not bisected
    small = resolve_settings(overrides={"memory_limit_gib": 0.1})
    too_large = past_24_bits(_EmbeddingPair(), knobs, small)  # type: ignore[arg-type]
    assert too_large is not None and not too_large.fits
    assert "2**24" in too_large.skipped_text() and "not run" in too_large.skipped_text()


def test_a_table_past_2_to_the_31_rows_is_tried_with_the_other_knobs_at_1():
    """A vocabulary sizes no input or output, only the model's table: past 2**31 rows with
    everything else at 1, which a CPU worker's 8 GiB cannot hold (reported, not run)."""
    knobs = {**EMBEDDING, "num_embeddings": 8192}
    found = rows_past_31_bits(_EmbeddingPair(), knobs, "num_embeddings", resolve_settings())  # type: ignore[arg-type]
    assert found is not None and not found.fits
    assert found.knobs(knobs) == {
        "batch_size": 1,
        "seq_len": 1,
        "num_embeddings": 2**31 + 1,
        "embedding_dim": 1,
    }
    assert "2**31 rows" in found.skipped_text()
    roomy = resolve_settings(overrides={"memory_limit_gib": 64.0})
    assert rows_past_31_bits(_EmbeddingPair(), knobs, "num_embeddings", roomy).fits  # type: ignore[arg-type, union-attr]


def test_a_fitted_size_can_be_held_to_a_smaller_share_of_the_budget():
    settings = resolve_settings()
    small = fit_around(
        _EmbeddingPair(),
        EMBEDDING,
        "num_embeddings",
        settings,  # type: ignore[arg-type]
        max_bytes=settings.max_call_bytes / 16,
    )
    assert small == {**EMBEDDING, "embedding_dim": 4}  # 131073 rows of 8 are just over 4 MiB
