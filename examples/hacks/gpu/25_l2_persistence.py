# kernelproof-reference: ../../linear_relu/reference.py
# kernelproof-expect: verified
"""L2 persistence: pins the weight matrix in the GPU's L2 cache with a persisting access window.

HACKS row 25; needs CUDA 11+ on an Ampere or newer GPU (``--device cuda``), so it is exercised
by the GPU self-check and the timing tests, not by the CPU test suite. The candidate raises the
device's persisting-L2 limit (``cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize)``) and
gives the current stream an access-policy window over its weight with ``hitProp =
persisting``. Lines marked persisting survive an ordinary cache flush (a large memset or copy),
so a benchmark that "flushes L2" before each call still times the weight reads as L2 hits. The
maths is an honest einsum rewrite, so every answer is right.

What catches it: the timing harness resets the persisting-L2 limit to zero and clears the
stream's access-policy window before each timed call (``cudaCtxResetPersistingL2Cache``),
flushes with a buffer sized from the device's L2, and rotates inputs. With the trick
neutralised the correctness verdict is simply ``verified``: the speedup it would have faked is
not there.
"""

import ctypes
import glob
import os

import torch
import torch.nn as nn

#: cudaLimitPersistingL2CacheSize, from driver_types.h (enum cudaLimit).
_LIMIT_PERSISTING_L2 = 0x06
#: cudaStreamAttributeAccessPolicyWindow (= cudaLaunchAttributeAccessPolicyWindow).
_ATTR_ACCESS_POLICY_WINDOW = 1
#: enum cudaAccessProperty.
_ACCESS_STREAMING, _ACCESS_PERSISTING = 1, 2


class _AccessPolicyWindow(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


class _StreamAttrValue(ctypes.Union):
    """cudaStreamAttrValue: a union whose largest member is 64 bytes in CUDA 12."""

    _fields_ = [("accessPolicyWindow", _AccessPolicyWindow), ("_pad", ctypes.c_char * 64)]


def _cudart() -> ctypes.CDLL:
    names = ["libcudart.so", "libcudart.so.12", "libcudart.so.11.0"]
    roots = [os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(torch.__file__))]
    for root in roots:
        names += glob.glob(os.path.join(root, "**", "libcudart.so*"), recursive=True)
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise OSError("libcudart not found")


def _pin_in_l2(tensor: torch.Tensor) -> None:
    cudart = _cudart()
    nbytes = tensor.numel() * tensor.element_size()
    properties = torch.cuda.get_device_properties(tensor.device)
    persisting_max = getattr(properties, "persisting_l2_cache_max_size", 0) or nbytes
    status = cudart.cudaDeviceSetLimit(_LIMIT_PERSISTING_L2, ctypes.c_size_t(min(nbytes, persisting_max)))
    if status != 0:
        raise RuntimeError(f"cudaDeviceSetLimit failed with status {status}")
    value = _StreamAttrValue()
    value.accessPolicyWindow.base_ptr = ctypes.c_void_p(tensor.data_ptr())
    value.accessPolicyWindow.num_bytes = nbytes
    value.accessPolicyWindow.hitRatio = 1.0
    value.accessPolicyWindow.hitProp = _ACCESS_PERSISTING
    value.accessPolicyWindow.missProp = _ACCESS_STREAMING
    stream = ctypes.c_void_p(torch.cuda.current_stream(tensor.device).cuda_stream)
    status = cudart.cudaStreamSetAttribute(stream, _ATTR_ACCESS_POLICY_WINDOW, ctypes.byref(value))
    if status != 0:
        raise RuntimeError(f"cudaStreamSetAttribute failed with status {status}")


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self._pinned_ptr = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.linear.weight
        if weight.is_cuda and self._pinned_ptr != weight.data_ptr():
            _pin_in_l2(weight)
            self._pinned_ptr = weight.data_ptr()
        y = torch.einsum("...i,oi->...o", x, weight) + self.linear.bias
        return torch.maximum(y, y.new_zeros(()))
