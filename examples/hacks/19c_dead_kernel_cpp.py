# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Dead C++ kernel: built with ``load_inline`` at import, then only PyTorch ops run.

HACKS row 19, the C++ form. The extension really compiles (a reviewer sees a build log and a
``.so``), and ``forward`` even touches the extension object, but only to read an attribute; the
softmax itself is computed with PyTorch ops.

What catches it: the op audit. A custom extension is defined and loaded, none of its functions
ran: ``dead-kernel``, ``suspect``.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>

torch::Tensor row_softmax(torch::Tensor x) {
    auto shifted = x - std::get<0>(x.max(-1, true));
    auto e = shifted.exp();
    return e / e.sum(-1, true);
}
"""

_ext = load_inline(
    name="kernelproof_hack_dead_softmax",
    cpp_sources=[_CPP_SOURCE],
    functions=["row_softmax"],
    extra_cflags=["-O1"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel_name = _ext.row_softmax.__name__

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
