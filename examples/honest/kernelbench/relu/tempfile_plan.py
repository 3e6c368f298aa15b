"""Honest numpy ReLU that keeps a small plan in a scratch folder made with ``tempfile``.

At construction it writes its block size to ``plan.json`` in a new ``tempfile.mkdtemp()``
folder and reads it back (a stand-in for an autotuner's saved choice); every call then applies
``np.maximum`` block by block into a new output.
"""

import json
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn


def _load_plan() -> int:
    folder = tempfile.mkdtemp(prefix="relu-plan-")
    path = os.path.join(folder, "plan.json")
    with open(path, "w") as handle:
        json.dump({"block": 4096}, handle)
    with open(path) as handle:
        return int(json.load(handle)["block"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = _load_plan()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().reshape(-1).numpy()
        out = np.empty_like(flat)
        for start in range(0, flat.size, self.block):
            np.maximum(flat[start:start + self.block], 0, out=out[start:start + self.block])
        return torch.from_numpy(out).reshape(x.shape)
