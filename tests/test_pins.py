"""Artifacts later runs trust are used only when their bytes match the controller's pin."""

from __future__ import annotations

import json

import pytest

from kernelproof import pins
from kernelproof.roofline import calibration, calibration_record


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_a_pinned_artifact_is_trusted_and_a_changed_one_is_discarded(cache):
    artifact = cache / "helper.so"
    artifact.write_bytes(b"built by the controller")
    pins.pin(artifact)
    assert pins.trusted_bytes(artifact) == b"built by the controller"
    artifact.write_bytes(b"a stand-in that evicts nothing")
    assert pins.trusted_bytes(artifact) is None
    assert not artifact.exists(), "a tampered artifact must be deleted, so it is rebuilt"


def test_an_unpinned_artifact_is_not_trusted(cache):
    artifact = cache / "planted.json"
    artifact.write_text("{}")
    assert pins.trusted_bytes(artifact) is None


def test_a_calibration_with_ceilings_raised_a_thousandfold_is_not_used(cache, monkeypatch):
    """HACKS row 29: a candidate rewrote the calibration so that every floor vanished."""
    monkeypatch.setattr(
        calibration_record, "NOISY_COPY_SPREAD", float("inf")
    )  # cache it, however busy
    monkeypatch.setattr(calibration, "STARVED_WAIT_SHARE", float("inf"))
    calibration.calibrate(
        "cpu", threads=1, force=True, repeats=1, copy_bytes=8 << 20, matmul_size=128
    )
    path = next(cache.glob("calibration-*.json"))
    assert calibration.load_calibration("cpu", threads=1) is not None
    data = json.loads(path.read_text())
    data["bytes_per_s"] = data["bytes_per_s"] * 1000
    path.write_text(json.dumps(data))
    assert calibration.load_calibration("cpu", threads=1) is None
    assert not path.exists()


def test_a_replaced_eviction_helper_is_rebuilt_not_loaded(cache):
    from kernelproof.timing import cache_eviction

    first = cache_eviction.load_line_evictor()
    if first is None:
        pytest.skip("no C compiler or unsupported machine: the data flush falls back to full")
    stand_in = first.path.with_suffix(".stand-in")
    stand_in.write_bytes(b"\x7fELF not the helper")
    stand_in.replace(first.path)  # in place would break this process's mapping of it
    again = cache_eviction.load_line_evictor()
    assert again is not None
    assert pins.trusted_bytes(again.path) is not None


def test_a_calibration_taken_on_a_noisy_machine_is_not_cached(cache, monkeypatch):
    """A calibration whose copies vary widely read other work, not the machine: it is used
    (and says so in its source) but never written where later runs would trust it."""
    monkeypatch.setattr(
        calibration,
        "measure_copy",
        lambda kind, name, size, samples: (1e10, [1.0, 1.6, 1.7, 1.8, 2.0]),
    )
    ceilings = calibration.calibrate(
        "cpu", threads=1, force=True, repeats=1, copy_bytes=8 << 20, matmul_size=64
    )
    assert "noisy" in ceilings.source and "not cached" in ceilings.source
    assert not list(cache.glob("calibration-*.json"))
