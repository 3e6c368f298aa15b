"""Mixture-of-experts layer with top-k routing: a linear router scores each token against
``num_experts = top_k + spare_experts`` experts (so top_k < num_experts for any knob values),
each token is sent to its top-k experts (GELU MLPs of width ffn_dim), and their outputs are
combined with the routing weights, on (batch_size, seq_len, d_model) tokens.

Compute-bound: each token runs top_k expert MLPs, 4*top_k*d_model*ffn_dim FLOPs, against expert
weights read once per call; routing (a small GEMM, softmax, top-k) and the gather/scatter of
tokens are memory-bound overheads.

Routing weights are continuous in the inputs, on purpose. A token's weight for expert e is
``relu(p_e - p_(k+1))``, its router probability minus the largest probability that was *not*
selected. It is positive exactly for the top-k experts, and it goes to zero as an expert nears
the selection boundary, so a near-tie that float32 and the float64 oracle break differently
moves the output by a rounding-sized amount instead of swapping a whole expert's contribution
(the usual "softmax over the top-k logits" jumps there: with top_k=1 it is 1 on either side of
the tie). The weights are deliberately not renormalised over the k experts, which would bring
the jump back (with top_k=1 every weight would be exactly 1).
"""

import torch
import torch.nn as nn

# default forward: ~8 ms on the 2-vCPU dev machine
batch_size = 4
seq_len = 64
d_model = 256
ffn_dim = 512
top_k = 2
spare_experts = 6

#: Knob settings worth testing besides the default: one token and one expert pair, odd and
#: prime sizes, and more tokens.
SHAPES = [
    dict(batch_size=1, seq_len=1, d_model=1, ffn_dim=1, top_k=1, spare_experts=1),
    dict(batch_size=3, seq_len=5, d_model=17, ffn_dim=11, top_k=3, spare_experts=2),
    dict(batch_size=2, seq_len=31, d_model=61, ffn_dim=127, top_k=1, spare_experts=7),
    dict(batch_size=8, seq_len=128, d_model=256, ffn_dim=512, top_k=2, spare_experts=6),
]


class Expert(nn.Module):
    """One expert: ``w2(gelu(w1(x)))``."""

    def __init__(self, d_model: int, ffn_dim: int):
        super().__init__()
        self.w1 = nn.Linear(d_model, ffn_dim)
        self.w2 = nn.Linear(ffn_dim, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(torch.nn.functional.gelu(self.w1(x)))


class Model(nn.Module):
    """Router, top-k selection with margin weights, per-expert MLPs on their own tokens."""

    def __init__(self, d_model: int, ffn_dim: int, top_k: int, num_experts: int):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d_model, ffn_dim) for _ in range(num_experts))
        with torch.no_grad():  # router logits of standard deviation ~1: decisive, not one-hot
            self.router.weight.normal_(0.0, d_model**-0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.reshape(-1, x.shape[-1])
        probs = torch.softmax(self.router(tokens), dim=-1)
        first_dropped = probs.topk(self.top_k + 1, dim=-1).values[:, -1:]
        weights = (probs - first_dropped).clamp_min(0.0)
        out = torch.zeros_like(tokens)
        for index, expert in enumerate(self.experts):
            # `!= 0` rather than `> 0`: a NaN weight (from a NaN token) still routes the token,
            # so bad input shows in the output instead of being silently dropped.
            chosen = (weights[:, index] != 0).nonzero().squeeze(1)
            if chosen.numel() == 0:
                continue
            contribution = expert(tokens[chosen]) * weights[chosen, index].unsqueeze(1)
            out.index_add_(0, chosen, contribution)
        return out.view(x.shape)


def get_inputs():
    return [torch.randn(batch_size, seq_len, d_model)]


def get_init_inputs():
    return [d_model, ffn_dim, top_k, top_k + spare_experts]
