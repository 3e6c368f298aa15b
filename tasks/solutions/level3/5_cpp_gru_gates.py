"""Honest C++ solution for level 3, task 5 (one GRU cell step), built at import with
``torch.utils.cpp_extension.load_inline``.

The two GEMMs stay with BLAS (``torch.addmm``, biases folded in as the beta term):
``gi = x @ W_ih^T + b_ih`` and ``gh = h @ W_hh^T + b_hh``, each (batch, 3 * hidden) in PyTorch's
gate order (reset, update, new). The gate math, which ``nn.GRUCell`` runs as a chain of
elementwise ops with a temporary each, is one C++ loop per batch row:

    r = sigmoid(gi_r + gh_r);  z = sigmoid(gi_z + gh_z)
    n = tanh(gi_n + r * gh_n);  h' = n + z * (h - n)

``sigmoid`` and ``tanh`` are built on a Cephes-style ``exp`` polynomial (about 1 ulp) written as
plain arithmetic and selects, so the compiler vectorises the loop (``std::exp`` is a scalar
libm call); ``tanh(v) = 2 / (1 + exp(-2v)) - 1`` errs by about one float epsilon absolutely
near 0. Overflow saturates exactly (``sigmoid(+-inf)`` is 1 or 0) and NaN propagates.
``-fno-trapping-math`` lets GCC if-convert the selects; it changes no result. No fast-math.

Single-threaded on purpose; the extension name is fixed, so the build is cached in
``TORCH_EXTENSIONS_DIR``.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <cstdint>
#include <cstring>
#include <limits>

// exp(x) for any float, vectorisable: 2^k * p(r) with x = k ln2 + r, |r| <= ln2 / 2.
static inline float exp_any(float x) {
    const float safe = x >= -87.0f ? (x <= 88.0f ? x : 88.0f) : -87.0f;  // NaN -> -87
    const float z = safe * 1.44269504088896341f;
    const int32_t k = static_cast<int32_t>(z >= 0.0f ? z + 0.5f : z - 0.5f);  // round
    const float n = static_cast<float>(k);
    float r = safe - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    const int32_t exponent = (k + 127) << 23;  // k in [-126, 127]: a normal power of two
    float scale;
    std::memcpy(&scale, &exponent, sizeof(scale));
    const float result = p * scale;
    const float inf = std::numeric_limits<float>::infinity();
    return x != x ? x : (x < -87.0f ? 0.0f : (x > 88.0f ? inf : result));
}

static inline float sigmoid(float v) { return 1.0f / (1.0f + exp_any(-v)); }

static inline float tanh_via_exp(float v) { return 2.0f / (1.0f + exp_any(-2.0f * v)) - 1.0f; }

torch::Tensor gru_gates(torch::Tensor gi, torch::Tensor gh, torch::Tensor h) {
    TORCH_CHECK(gi.device().is_cpu() && gh.device().is_cpu() && h.device().is_cpu(),
                "gru_gates: expected CPU tensors");
    TORCH_CHECK(gi.scalar_type() == torch::kFloat32 && gh.scalar_type() == torch::kFloat32 &&
                h.scalar_type() == torch::kFloat32, "gru_gates: expected float32 tensors");
    TORCH_CHECK(h.dim() == 2 && gi.dim() == 2 && gh.dim() == 2, "gru_gates: expected 2-D");
    const int64_t batch = h.size(0), hidden = h.size(1);
    TORCH_CHECK(gi.size(0) == batch && gh.size(0) == batch && gi.size(1) == 3 * hidden &&
                gh.size(1) == 3 * hidden, "gru_gates: gate shapes do not match the state");
    auto gi_c = gi.contiguous(), gh_c = gh.contiguous(), h_c = h.contiguous();
    auto out = torch::empty({batch, hidden}, h.options());
    const float* gi_p = gi_c.data_ptr<float>();
    const float* gh_p = gh_c.data_ptr<float>();
    const float* h_p = h_c.data_ptr<float>();
    float* out_p = out.data_ptr<float>();
    for (int64_t b = 0; b < batch; ++b) {
        const float* gi_row = gi_p + b * 3 * hidden;
        const float* gh_row = gh_p + b * 3 * hidden;
        const float* h_row = h_p + b * hidden;
        float* out_row = out_p + b * hidden;
        for (int64_t j = 0; j < hidden; ++j) {
            const float r = sigmoid(gi_row[j] + gh_row[j]);
            const float z = sigmoid(gi_row[hidden + j] + gh_row[hidden + j]);
            const float n = tanh_via_exp(gi_row[2 * hidden + j] + r * gh_row[2 * hidden + j]);
            out_row[j] = n + z * (h_row[j] - n);
        }
    }
    return out;
}
"""

_ext = load_inline(
    name="kernelproof_suite_l3_gru_gates",
    cpp_sources=[_CPP_SOURCE],
    functions=["gru_gates"],
    extra_cflags=["-O3", "-fno-trapping-math"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.GRUCell(input_size, hidden_size)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        cell = self.cell
        gi = torch.addmm(cell.bias_ih.detach(), x.detach(), cell.weight_ih.detach().t())
        gh = torch.addmm(cell.bias_hh.detach(), h.detach(), cell.weight_hh.detach().t())
        return _ext.gru_gates(gi, gh, h.detach())
