"""A candidate's first call may compile its kernels (``torch.compile``, Triton's JIT, numba
without a signature): it gets the build timeout; later calls get the call timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.controller.verify import verify

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SOFTMAX = ROOT / "examples" / "softmax" / "reference.py"

CANDIDATE = """
import time
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        _calls[0] += 1
        if _calls[0] {condition}:
            time.sleep(30.0)  # a lazy compile (first call) or a hang (later)
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
"""

SETTINGS = {
    "timing": False,
    "seeds": 1,
    "call_timeout_s": 15.0,
    "build_timeout_s": 120.0,
    "shape_variants": False,
    "value_variants": False,
    "layout_variants": False,
}


def test_a_slow_first_call_is_a_build_not_a_hang(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text(CANDIDATE.format(condition="== 1"))
    report = verify(SOFTMAX, candidate, **SETTINGS)
    assert report.verdict.value == "verified", report.summary


def test_a_later_call_past_the_call_timeout_is_still_a_timeout(tmp_path):
    candidate = tmp_path / "candidate.py"
    candidate.write_text(CANDIDATE.format(condition="== 3"))
    report = verify(SOFTMAX, candidate, **SETTINGS)
    assert report.verdict.value == "broken", report.summary
    assert "timed out" in report.summary or any(
        "timed out" in f.message for f in report.findings
    ), report.summary
