"""Honest C++ log-softmax over dim 1 of a 2-D input, built at import with ``load_inline``.

Three passes per row while it is in cache: the row maximum, the sum of ``exp(x - max)``
(accumulated in float64), then ``x - (max + log(sum))``. NaN is skipped by the max pass but
reaches the sum through ``exp(NaN - max)``, so a row holding NaN comes out all NaN, as in
``torch.log_softmax``; a ``+inf`` makes ``inf - inf = NaN`` likewise.

Single-threaded on purpose (no thread pool of its own); any layout (the wrapper makes the input
contiguous). The extension name is fixed, so the build is cached in ``TORCH_EXTENSIONS_DIR``.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cmath>
#include <limits>

torch::Tensor log_softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.device().is_cpu(), "log_softmax_rows: expected a CPU tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32,
                "log_softmax_rows: expected float32, got ", x.scalar_type());
    TORCH_CHECK(x.dim() == 2, "log_softmax_rows: expected a 2-D input, got ", x.dim(), "-D");
    auto input = x.contiguous();
    auto out = torch::empty_like(input);
    const int64_t rows = input.size(0);
    const int64_t cols = input.size(1);
    if (input.numel() == 0) {
        return out;
    }
    const float* src = input.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t r = 0; r < rows; ++r) {
        const float* in_row = src + r * cols;
        float* out_row = dst + r * cols;
        float row_max = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < cols; ++c) {
            row_max = in_row[c] > row_max ? in_row[c] : row_max;
        }
        double sum = 0.0;
        for (int64_t c = 0; c < cols; ++c) {
            sum += std::exp(static_cast<double>(in_row[c]) - row_max);
        }
        const double log_norm = static_cast<double>(row_max) + std::log(sum);
        for (int64_t c = 0; c < cols; ++c) {
            out_row[c] = static_cast<float>(static_cast<double>(in_row[c]) - log_norm);
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="kernelproof_level1_log_softmax_cpp",
    cpp_sources=[_CPP_SOURCE],
    functions=["log_softmax_rows"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.log_softmax_rows(x)
