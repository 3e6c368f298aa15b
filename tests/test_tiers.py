"""The test tiers: ``gpu`` tests skip by themselves where CUDA is absent."""

import subprocess
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]

#: A test marked only ``gpu``, with no skipif of its own.
GPU_TEST = "tests/roofline/test_calibration.py::test_cuda_calibration_runs"


def test_a_gpu_test_skips_itself_only_without_cuda():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", GPU_TEST, "-rs", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    skipped = "marked gpu: needs a CUDA device" in result.stdout
    assert skipped is not torch.cuda.is_available(), result.stdout[-2000:]
    assert result.returncode == 0, result.stdout[-2000:]
