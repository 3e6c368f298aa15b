"""Meta-device estimates of one call: what sizing and the past-2**31 variants rest on."""

from __future__ import annotations

import torch

from kernelproof.tasks.module import module_from_source
from kernelproof.tasks.planning import estimate_call

_TASK = """
import torch
import torch.nn as nn

rows = 3
cols = 5


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(cols))

    def forward(self, x, y):
        return torch.cat([x * self.scale, y * self.scale], dim=0)


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(2 * rows, cols)]


def get_init_inputs():
    return []
"""


def test_the_estimate_counts_bytes_and_the_largest_single_tensor(tmp_path):
    path = tmp_path / "task.py"
    path.write_text(_TASK)
    estimate = estimate_call(module_from_source(_TASK, path, "planning_probe"), torch.float32)
    assert estimate["ok"]
    # Inputs 15 + 30, parameter 5, output 45 elements, 4 bytes each.
    assert estimate["bytes"] == 4 * (15 + 30 + 5 + 45)
    assert estimate["largest_tensor_elements"] == 45
    assert estimate["output_elements"] == 45
