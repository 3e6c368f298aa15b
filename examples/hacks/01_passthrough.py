# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Reference passthrough: the "kernel" is the reference's own op.

HACKS row 1. A naive evaluator sees a correct answer and a speedup of about 1x, and counts a
kernel that was never written. The outputs are right on every variant, so no correctness check
can object.

What catches it: the op audit. The candidate runs exactly the aten ops the reference runs (one
``_softmax`` per call, same shapes) and no custom code: a passthrough, ``suspect`` by default
(``info`` under ``--allow-torch``). Static evidence is unnecessary here and, as the disguised
variants ``01b``-``01d`` show, would not be enough.
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)
