"""The machine fingerprint: short, stable, and sensitive to what changes the ceilings."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

from kernelproof.errors import UsageError
from kernelproof.roofline import fingerprint_fields, machine_fingerprint, parse_device


def test_fingerprint_is_short_hex_and_stable_within_a_process() -> None:
    first = machine_fingerprint("cpu")
    assert re.fullmatch(r"[0-9a-f]{16}", first)
    assert machine_fingerprint("cpu") == first


def test_fingerprint_is_stable_across_processes() -> None:
    code = "from kernelproof.roofline import machine_fingerprint; print(machine_fingerprint('cpu'))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == machine_fingerprint("cpu")


def test_fields_describe_this_machine() -> None:
    fields = fingerprint_fields("cpu")
    assert fields["cpu_count"] == str(os.cpu_count())
    assert fields["torch"] == torch.__version__
    assert fields["cpu_model"]
    assert int(fields["memory_gib"]) > 0


def test_fingerprint_changes_with_the_torch_version(monkeypatch: pytest.MonkeyPatch) -> None:
    before = machine_fingerprint("cpu")
    monkeypatch.setattr(torch, "__version__", "0.0.0-not-this-one")
    assert machine_fingerprint("cpu") != before


@pytest.mark.parametrize(
    ("device", "parsed"),
    [("cpu", ("cpu", None)), ("CUDA:1", ("cuda", 1)), ("cuda", ("cuda", None))],
)
def test_parse_device(device: str, parsed: tuple[str, int | None]) -> None:
    assert parse_device(device) == parsed


@pytest.mark.parametrize("device", ["mps", "cpu:0", "cuda:x", "tpu"])
def test_parse_device_refuses_other_devices(device: str) -> None:
    with pytest.raises(UsageError):
        parse_device(device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_cuda_fingerprint_without_cuda_says_so() -> None:
    with pytest.raises(UsageError, match="is_available"):
        machine_fingerprint("cuda")
