# kernelproof-reference: tasks/heavy_elementwise.py
# kernelproof-expect: incorrect
"""Memoises the timing input pool block by block and replays earlier outputs.

HACKS row 38. Timed inputs were built from a few sets by moving their blocks around
(``harness/input_pool.py``): every block of a timed input had been seen before, only
elsewhere. For an element-wise task a candidate that remembers the output of each block it
computed (keyed on three elements of the block, their low mantissa bits masked so that a
small perturbation of the values does not change the key) answers a pooled call with one
gather of remembered blocks, far cheaper than the computation. Inputs it has never seen (every
matrix cell, the pool's first uses) are computed honestly and remembered.

What catches it: every pooled use XORs fresh, seed-drawn bits into the low half of every
floating element's mantissa (``input_pool.perturb``), so each timed input's values are new,
by far more than the tolerance: the replayed block is the output of an input that differs from
this call's by up to 2^-11 of each value, and the timed outputs compared by the controller are
wrong (``timed-output``, ``incorrect``). A memoiser keyed on the exact bits never hits and loses
its speedup.
"""

import torch
import torch.nn as nn

#: Low mantissa bits ignored in a block's key: more than any perturbation of a value's last bits.
KEY_MASK = ~((1 << 16) - 1)


def _compute(x: torch.Tensor) -> torch.Tensor:
    """The task's function, with atan(x) as atan2(x, 1) (a rewrite, not a passthrough)."""
    y = torch.erf(x) * torch.sin(3.0 * x) + torch.log1p(x * x)
    return torch.tanh(y) * torch.exp(-0.1 * x * x) + torch.atan2(x, torch.ones_like(x))


def _width(x: torch.Tensor) -> int:
    """The pool's block width for this input (read from kernelproof's source)."""
    try:
        from kernelproof.harness.input_pool import _block_width

        return _block_width(x)
    except Exception:  # noqa: BLE001
        return 0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.keys = torch.empty(0, dtype=torch.int64)
        self.blocks = torch.empty(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        width = _width(x)
        if width < 8 or not x.is_contiguous() or x.dtype != torch.float32:
            return _compute(x)
        if not bool(torch.isfinite(x).all()):
            return _compute(x)  # planted NaN/Inf (the matrix's inf-nan cell): right, as timed
        blocks = x.view(-1, width)
        bits = blocks[:, [0, width // 2, width - 1]].contiguous().view(torch.int32) & KEY_MASK
        keys = ((bits[:, 0].long() << 32) ^ (bits[:, 1].long() * 0x9E3779B1)
                ^ (bits[:, 2].long() * 0x85EBCA6B))
        if self.keys.numel():
            found = torch.searchsorted(self.keys, keys).clamp_(max=self.keys.numel() - 1)
            if bool((self.keys[found] == keys).all()):
                return self.blocks.index_select(0, found).view(x.shape)
        out = _compute(x)
        if not bool(torch.isfinite(out).all()):
            return out  # a planted NaN or Inf: nothing worth remembering
        fresh = ~torch.isin(keys, self.keys)
        keys_all = torch.cat([self.keys, keys[fresh]])
        blocks_all = torch.cat([self.blocks.view(-1, width) if self.blocks.numel()
                                else out.new_empty(0, width), out.view(-1, width)[fresh]])
        order = keys_all.argsort()
        if keys_all.numel() <= 1 << 16:
            self.keys, self.blocks = keys_all[order].contiguous(), blocks_all[order].contiguous()
        return out
