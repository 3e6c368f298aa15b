# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Lazy output: a tensor subclass that computes its values on first use, not in ``forward``.

HACKS row 7. ``forward`` returns an uninitialised ``_Deferred`` tensor that only remembers its
input. Its ``__torch_function__`` runs the real softmax the first time any torch function touches
it (``allclose``, ``sub``, ``clone``, ``==``...), so the work happens inside the evaluator's
comparison, after the timer stopped. The call itself takes microseconds.

What catches it: the harness requires every output to be exactly ``torch.Tensor`` with real
storage (``output-type``, ``suspect``), and compares plain bytes in another process. Here the
harness's own probes touch the subclass first, so the bytes that reach the controller are right:
the type check is what convicts it.
"""

import torch
import torch.nn as nn


class _Deferred(torch.Tensor):
    """An output whose values are computed the first time torch sees it."""

    @staticmethod
    def __new__(cls, source: torch.Tensor) -> "_Deferred":
        out = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        out._pending_source = source
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, _Deferred) and arg.__dict__.get("_pending_source") is not None:
                arg._materialise()
        return super().__torch_function__(func, types, args, kwargs)

    def _materialise(self) -> None:
        source = self.__dict__.pop("_pending_source")
        with torch._C.DisableTorchFunctionSubclass():
            e = (source - source.amax(dim=-1, keepdim=True)).exp()
            self.copy_(e / e.sum(dim=-1, keepdim=True))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Deferred(x)
