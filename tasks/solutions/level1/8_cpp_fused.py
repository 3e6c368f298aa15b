"""Honest C++ RMSNorm: one loop nest per row, built at import with ``load_inline``.

The reference runs six eager ops (pow, mean, add, rsqrt and two multiplies), each a full pass over
the tensor. This kernel reads a row twice while it is still in cache (sum of squares, then scale)
and writes it once. The sum of squares is accumulated in float64 over eight independent lanes,
so it vectorises and is at least as accurate as the reference's; the output is computed as
``(x * inv_rms) * weight`` in float32, in the reference's order.

Single-threaded on purpose (no thread pool of its own). Any leading dimensions and any layout:
the wrapper makes the input contiguous. The extension name is fixed, so the build is cached in
``TORCH_EXTENSIONS_DIR``.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>

torch::Tensor rmsnorm_forward(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu(),
                "rmsnorm_forward: expected CPU tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32,
                "rmsnorm_forward: expected float32, got ", x.scalar_type(), " and ",
                weight.scalar_type());
    TORCH_CHECK(x.dim() >= 1, "rmsnorm_forward: expected at least one dimension");
    const int64_t hidden = x.size(-1);
    TORCH_CHECK(weight.numel() == hidden, "rmsnorm_forward: weight has ", weight.numel(),
                " elements, the last dimension has ", hidden);
    auto input = x.contiguous();
    auto w = weight.contiguous();
    auto out = torch::empty_like(input);
    if (input.numel() == 0) {
        return out;
    }
    const int64_t rows = input.numel() / hidden;
    const float* src = input.data_ptr<float>();
    const float* wp = w.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    constexpr int kLanes = 8;
    for (int64_t r = 0; r < rows; ++r) {
        const float* row = src + r * hidden;
        float* out_row = dst + r * hidden;
        double lanes[kLanes] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        int64_t c = 0;
        for (; c + kLanes <= hidden; c += kLanes) {
            for (int j = 0; j < kLanes; ++j) {
                const double v = row[c + j];
                lanes[j] += v * v;
            }
        }
        double sum_square = 0.0;
        for (int j = 0; j < kLanes; ++j) {
            sum_square += lanes[j];
        }
        for (; c < hidden; ++c) {
            const double v = row[c];
            sum_square += v * v;
        }
        const float inv_rms =
            static_cast<float>(1.0 / std::sqrt(sum_square / static_cast<double>(hidden) + eps));
        for (int64_t k = 0; k < hidden; ++k) {
            out_row[k] = (row[k] * inv_rms) * wp[k];
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="kernelproof_level1_rmsnorm_cpp",
    cpp_sources=[_CPP_SOURCE],
    functions=["rmsnorm_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.eps = 1e-6
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.rmsnorm_forward(x, self.weight.detach(), self.eps)
