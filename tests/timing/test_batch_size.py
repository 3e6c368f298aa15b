"""How many timed calls a batch holds: about TARGET_BATCH_S of them, more than 64 only while
the outputs the workers keep for verification stay small."""

from __future__ import annotations

from kernelproof.controller.timing_session import (
    MAX_BATCH,
    MAX_BATCH_OUTPUT_BYTES,
    MIN_BATCH,
    OUTPUT_BOUND_BATCH,
    TARGET_BATCH_S,
    _batch_size,
)


def test_a_long_call_gets_a_batch_of_the_target_time():
    assert _batch_size(TARGET_BATCH_S / 10, 16 << 20) == 10
    assert _batch_size(TARGET_BATCH_S * 5, 16 << 20) == MIN_BATCH


def test_short_calls_with_small_outputs_fill_the_target_time():
    """A 7 us call with 32 KiB of output: far past 64 calls, up to the byte bound."""
    calls = _batch_size(27e-6, 32 << 10)
    assert calls == min(MAX_BATCH, MAX_BATCH_OUTPUT_BYTES // (32 << 10))
    assert calls > OUTPUT_BOUND_BATCH


def test_large_or_unknown_outputs_keep_the_old_bound():
    # Before the first verified round the output size is unknown.
    assert _batch_size(27e-6, 0) == OUTPUT_BOUND_BATCH
    # 1 MiB a call: 64 of them are already the byte bound.
    assert _batch_size(27e-6, 1 << 20) == OUTPUT_BOUND_BATCH
    assert _batch_size(27e-6, 64 << 20) == OUTPUT_BOUND_BATCH
