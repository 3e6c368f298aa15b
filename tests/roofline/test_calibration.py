"""Calibration: measured ceilings, their cache, and the choice between datasheet and measurement."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelproof.errors import UsageError
from kernelproof.roofline import (
    attainable_peak,
    cache_dir,
    calibrate,
    calibration,
    calibration_record,
    ceilings_for,
    find_device,
    load_calibration,
    machine_fingerprint,
)

#: Sizes small enough that a calibration takes well under a second on a 2-core machine.
SMALL = {"copy_bytes": 1 << 20, "matmul_size": 64, "repeats": 2}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(folder))
    # These tests are about caching; on a loaded test machine the tiny copies are noisy and
    # would not be cached (tests/test_pins.py tests that rule).
    monkeypatch.setattr(calibration_record, "NOISY_COPY_SPREAD", float("inf"))
    monkeypatch.setattr(calibration, "STARVED_WAIT_SHARE", float("inf"))
    return folder


def test_cache_dir_follows_the_environment(cache: Path) -> None:
    assert cache_dir() == cache


def test_cache_dir_defaults_to_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KERNELPROOF_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "kernelproof"


def test_calibration_measures_positive_ceilings_and_names_the_machine(cache: Path) -> None:
    ceilings = calibrate(**SMALL)
    assert ceilings.peak_flops > 0
    assert ceilings.peak_bytes_per_s > 0
    assert ceilings.source == f"calibration:{machine_fingerprint('cpu')}"
    files = list(cache.glob("calibration-*.json"))
    assert len(files) == 1 and machine_fingerprint("cpu") in files[0].name


def test_calibration_is_cached_and_reused(cache: Path) -> None:
    first = calibrate(**SMALL)
    (path,) = cache.glob("calibration-*.json")
    written = path.stat().st_mtime_ns
    record = load_calibration()
    assert record is not None
    # A fresh measurement would give other best times; identical values mean the cache was used.
    assert calibrate(**SMALL) == first
    assert calibrate() == first  # no explicit sizes: whatever is cached is reused
    assert path.stat().st_mtime_ns == written
    assert load_calibration() == record


def test_force_measures_again(cache: Path) -> None:
    calibrate(**SMALL)
    before = load_calibration()
    calibrate(force=True, **SMALL)
    after = load_calibration()
    assert before is not None and after is not None
    assert after.copy_samples_s != before.copy_samples_s


def test_other_explicit_sizes_measure_again(cache: Path) -> None:
    calibrate(**SMALL)
    calibrate(copy_bytes=2 << 20, matmul_size=32, repeats=2)
    record = load_calibration()
    assert record is not None
    assert record.copy_bytes == 2 << 20
    assert record.matmul["float32"].max_size == 32
    assert record.matmul["float32"].size == 32


def test_bandwidth_is_the_best_of_read_write_and_copy_streams(monkeypatch) -> None:
    from kernelproof.roofline import calibration_measure

    seconds = iter([[4.0], [1.0], [3.0]])  # read, write, copy: the write stream wins
    monkeypatch.setattr(calibration_measure, "time_calls", lambda fn, kind, repeats: next(seconds))
    rate, samples = calibration_measure.measure_copy("cpu", "cpu", 4000, repeats=1)
    assert (rate, samples) == (4000 / 1.0, [1.0])  # the copy reached 2 * 4000 / 3.0


def test_record_keeps_raw_samples(cache: Path) -> None:
    calibrate(**SMALL)
    record = load_calibration()
    assert record is not None
    assert len(record.copy_samples_s) >= SMALL["repeats"]
    assert len(record.matmul["float32"].samples_s) == SMALL["repeats"]
    # The best of a read and a write stream (one byte count) and a copy (read plus write).
    assert record.bytes_per_s == pytest.approx(
        record.copy_bytes / min(record.copy_samples_s)
    ) or record.bytes_per_s == pytest.approx(2 * record.copy_bytes / min(record.copy_samples_s))
    fp32 = record.matmul["float32"]
    assert fp32.flops_per_s == pytest.approx(2 * fp32.size**3 / min(fp32.samples_s))


def test_corrupt_cache_is_measured_again(cache: Path) -> None:
    calibrate(**SMALL)
    (path,) = cache.glob("calibration-*.json")
    path.write_text("{not json")
    ceilings = calibrate(**SMALL)
    assert ceilings.peak_flops > 0
    assert load_calibration() is not None


def test_threads_are_applied_restored_and_cached_separately(cache: Path) -> None:
    before = torch.get_num_threads()
    calibrate(threads=1, **SMALL)
    assert torch.get_num_threads() == before
    one = load_calibration(threads=1)
    assert one is not None and one.threads == 1
    assert len(list(cache.glob("calibration-*-cpu-t1.json"))) == 1


def test_low_precision_ceiling_is_at_least_the_float32_one(cache: Path) -> None:
    fp32 = calibrate(**SMALL)
    bf16 = calibrate(dtype="bfloat16", **SMALL)
    assert bf16.peak_flops >= fp32.peak_flops
    record = load_calibration()
    assert record is not None and set(record.matmul) == {"float32", "bfloat16"}


def test_ceilings_for_cpu_uses_the_cached_calibration(cache: Path) -> None:
    calibrated = calibrate(**SMALL)
    assert ceilings_for("cpu", "float32") == calibrated
    assert ceilings_for("cpu", torch.float32) == calibrated
    assert ceilings_for("cpu", "tf32") == calibrated  # no TF32 on CPU


def test_attainable_peak_takes_the_fastest_exact_format() -> None:
    peaks = {"float32": 10.0, "tf32": 80.0, "bfloat16": 160.0, "float16": None, "float64": 5.0}
    assert attainable_peak("bfloat16", peaks.get) == 160.0
    assert attainable_peak("float16", peaks.get) == 80.0  # no fp16 figure: TF32 holds fp16 exactly
    assert attainable_peak("float32", peaks.get) == 10.0
    assert attainable_peak("float32", peaks.get, tf32_allowed=True) == 80.0
    assert attainable_peak("float64", peaks.get) == 5.0
    assert attainable_peak("float64", {"float64": None}.get) is None


@pytest.mark.parametrize(
    "knobs", [{"repeats": 0}, {"copy_bytes": 0}, {"matmul_size": -1}, {"threads": 0}]
)
def test_bad_knobs_are_refused(cache: Path, knobs: dict[str, int]) -> None:
    with pytest.raises(UsageError):
        calibrate(**knobs)


def test_unsupported_devices_are_refused() -> None:
    with pytest.raises(UsageError, match="unsupported device"):
        ceilings_for("mps", "float32")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_cuda_without_cuda_says_how_to_fix_it() -> None:
    with pytest.raises(UsageError, match="use device 'cpu'"):
        ceilings_for("cuda", "float32")


@pytest.mark.gpu
def test_cuda_ceilings_prefer_the_device_table(cache: Path) -> None:
    ceilings = ceilings_for("cuda", "bfloat16")
    spec = find_device(torch.cuda.get_device_name())
    if spec is not None:
        assert ceilings.source.startswith(f"device-table:{spec.key}")
        assert ceilings.peak_bytes_per_s == spec.bytes_per_s
    else:
        assert ceilings.source.startswith("calibration:")


@pytest.mark.gpu
def test_cuda_calibration_runs(cache: Path) -> None:
    ceilings = calibrate("cuda", dtype="bfloat16", copy_bytes=64 << 20, matmul_size=1024, repeats=2)
    assert ceilings.peak_flops > 0 and ceilings.peak_bytes_per_s > 0
    record = load_calibration("cuda")
    assert record is not None and {"float32", "tf32", "bfloat16"} <= set(record.matmul)


def test_a_calibration_starved_of_cpu_is_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25 class 6: a steady load slows every copy sample alike (no spread to see), so
    the calibrating thread's own wait for a CPU (/proc schedstat) decides."""
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(calibration_record, "NOISY_COPY_SPREAD", float("inf"))
    monkeypatch.setattr(calibration, "STARVED_WAIT_SHARE", -1.0)  # any wait at all is starved
    waits = iter([0.0, 0.5])
    monkeypatch.setattr(calibration, "own_wait_s", lambda: next(waits))
    ceilings = calibrate(**SMALL)
    assert "waited for a CPU" in ceilings.source and "not cached" in ceilings.source
    assert not list(tmp_path.glob("calibration-*.json"))
