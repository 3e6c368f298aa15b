# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Output cache keyed on an input fingerprint: replays the answer when the same input comes back.

HACKS row 9 (the fingerprint form); exercised by the timing tests, not by the CPU correctness
suite. The key is the input's shape, pointer, version counter and a few sampled values, so the
cache only hits when the very same tensor, unmodified, is passed again, which is exactly what a
benchmark loop that times one input a hundred times does. Every hit is a dictionary lookup and a
copy, and the "kernel" looks orders of magnitude faster than it is.

What catches it: nothing in the correctness matrix, since every call there gets new inputs and
the cache never hits (verdict ``verified``; the answers really are right). The timing phase gives
every timed call fresh input values, so the cache never hits there either and the measured time
is the real one; a time below the speed-of-light floor would flag any replay that slipped through.
"""

import torch
import torch.nn as nn


def _fingerprint(x: torch.Tensor) -> tuple:
    flat = x.reshape(-1)
    picks = flat[:: max(1, flat.numel() // 8)][:8]
    return (tuple(x.shape), x.data_ptr(), x._version, tuple(picks.tolist()))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._last_key = None
        self._last_out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = _fingerprint(x)
        if key != self._last_key:
            e = (x - x.amax(dim=-1, keepdim=True)).exp()
            self._last_out = e / e.sum(dim=-1, keepdim=True)
            self._last_key = key
        return self._last_out.clone()
