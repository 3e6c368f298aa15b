"""Honest C++ sum reduction with a float accumulator, built at import with ``load_inline``.

Each output is summed in float, in index order: a different order from torch's vectorised sum, equally honest. The reduced dimension is moved last and made contiguous, so one
sequential loop per output element sums it; any dimension, size and layout works.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
torch::Tensor sum_lastdim(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "sum_lastdim: expected float32, got ", x.scalar_type());
    auto input = x.contiguous();
    const int64_t cols = input.size(-1);
    auto sizes = input.sizes().vec();
    sizes.pop_back();
    auto out = torch::empty(sizes, input.options());
    const int64_t rows = out.numel();
    const float* src = input.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        float acc = 0;
        const float* row = src + r * cols;
        for (int64_t c = 0; c < cols; ++c) {
            acc += row[c];
        }
        dst[r] = static_cast<float>(acc);
    }
    return out;
}
"""

_ext = load_inline(name="kp_kb_sum_float", cpp_sources=[_CPP_SOURCE], functions=["sum_lastdim"],
                   extra_cflags=["-O2"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        moved = x.movedim(dim, -1).contiguous()
        return _ext.sum_lastdim(moved).unsqueeze(dim)
