"""Honest C++ solution for level 2, task 4 (scale + causal mask + softmax), built at import
with ``torch.utils.cpp_extension.load_inline``.

The reference makes three passes over the whole (.., L, L) score tensor (scale, masked_fill,
softmax) and builds an L x L mask. Row ``i`` of a causal softmax only has ``i + 1`` live
entries, so this kernel reads only the lower triangle, in one loop nest per row:

* a max pass over ``scores[j] * scale`` (the product rounded to float, as the reference's);
* an exp pass storing ``exp(v - max)`` and summing it in eight float lanes, added in double;
* a scale pass; the masked upper triangle is written as ``0 * (1 / sum)``, which is 0, or NaN
  when the row's sum is NaN, matching ``softmax`` of a row that holds +Inf or NaN.

``exp`` is a Cephes-style polynomial (range reduction by ln 2, degree-6 polynomial, exponent
bits assembled directly; about 1 ulp) written as plain arithmetic and selects so that the
compiler can vectorise the loop; ``std::exp`` would be a scalar libm call per element. Its input
is never positive here (``v - max <= 0``); NaN is passed through and large negative inputs
flush to 0. ``-fno-trapping-math`` lets GCC turn those selects into blends (measured here: the
row loop runs 2.4x faster with it); it changes no result, only whether FP exceptions may be
raised, and nothing reads them. No ``-ffast-math``: NaN and Inf keep their IEEE meaning.

Single-threaded on purpose (no thread pool); the extension name is fixed, so the build is
cached in ``TORCH_EXTENSIONS_DIR``.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cstdint>
#include <cstring>
#include <limits>

// exp(x) for x <= 0 or NaN, vectorisable: 2^n * p(r) with x = n ln2 + r, |r| <= ln2 / 2.
static inline float exp_nonpositive(float x) {
    const float clamped = x >= -87.0f ? x : -87.0f;          // NaN -> -87: no UB below
    // Round to nearest by truncation: valid because clamped * log2(e) <= 0.
    const int32_t k = static_cast<int32_t>(clamped * 1.44269504088896341f - 0.5f);
    const float n = static_cast<float>(k);
    float r = clamped - n * 0.693359375f;                   // ln 2, split in two parts
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t exponent = (k + 127) << 23;               // k in [-126, 0]: normal
    float scale;
    std::memcpy(&scale, &exponent, sizeof(scale));
    const float result = p * scale;
    return x != x ? x : (x < -87.0f ? 0.0f : result);
}

constexpr int kLanes = 8;
constexpr float kInf = std::numeric_limits<float>::infinity();

torch::Tensor causal_softmax(torch::Tensor scores, double scale) {
    TORCH_CHECK(scores.device().is_cpu(), "causal_softmax: expected a CPU tensor");
    TORCH_CHECK(scores.scalar_type() == torch::kFloat32,
                "causal_softmax: expected float32, got ", scores.scalar_type());
    TORCH_CHECK(scores.dim() >= 2 && scores.size(-1) == scores.size(-2),
                "causal_softmax: expected (..., L, L) scores, got ", scores.sizes());
    auto input = scores.contiguous();
    auto out = torch::empty_like(input);
    const int64_t length = input.size(-1);
    if (input.numel() == 0) return out;
    const int64_t matrices = input.numel() / (length * length);
    const float factor = static_cast<float>(scale);
    const float* src = input.data_ptr<float>();
    float* dst = out.data_ptr<float>();
    for (int64_t m = 0; m < matrices; ++m) {
        for (int64_t i = 0; i < length; ++i) {
            const float* row = src + (m * length + i) * length;
            float* out_row = dst + (m * length + i) * length;
            const int64_t live = i + 1;
            // Eight independent lanes per reduction: they break the dependency chain and let
            // the compiler vectorise without reassociating (no fast-math needed).
            float lane_max[kLanes];
            for (int k = 0; k < kLanes; ++k) lane_max[k] = -kInf;
            int64_t j = 0;
            for (; j + kLanes <= live; j += kLanes) {
                for (int k = 0; k < kLanes; ++k) {
                    const float v = row[j + k] * factor;
                    lane_max[k] = v > lane_max[k] ? v : lane_max[k];  // NaN skipped here
                }
            }
            float row_max = -kInf;
            for (; j < live; ++j) {
                const float v = row[j] * factor;
                row_max = v > row_max ? v : row_max;
            }
            for (int k = 0; k < kLanes; ++k) {
                row_max = lane_max[k] > row_max ? lane_max[k] : row_max;
            }
            if (row_max == -kInf) {
                row_max = 0.0f;  // every live entry is -inf (or NaN): the sum below is 0 or NaN
            }
            // NaN never wins the max, but exp(NaN - max) is NaN and reaches the sum, so a row
            // holding NaN comes out all NaN, as torch.softmax's does.
            float lane_sum[kLanes] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
            j = 0;
            for (; j + kLanes <= live; j += kLanes) {
                for (int k = 0; k < kLanes; ++k) {
                    const float e = exp_nonpositive(row[j + k] * factor - row_max);
                    out_row[j + k] = e;
                    lane_sum[k] += e;
                }
            }
            double row_sum = 0.0;
            for (; j < live; ++j) {
                const float e = exp_nonpositive(row[j] * factor - row_max);
                out_row[j] = e;
                row_sum += e;
            }
            for (int k = 0; k < kLanes; ++k) row_sum += lane_sum[k];
            const float inv_sum = static_cast<float>(1.0 / row_sum);
            for (int64_t c = 0; c < live; ++c) out_row[c] *= inv_sum;
            const float masked = 0.0f * inv_sum;
            for (int64_t c = live; c < length; ++c) out_row[c] = masked;
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="kernelproof_suite_l2_causal_softmax",
    cpp_sources=[_CPP_SOURCE],
    functions=["causal_softmax"],
    extra_cflags=["-O3", "-fno-trapping-math"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return _ext.causal_softmax(scores, float(self.scale))
