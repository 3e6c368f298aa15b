# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: verified
"""Overwrites shared memory: zeroes every segment in /dev/shm on each call, where a verifier
moves large reference outputs to the controller.

HACKS row 28. A reference output in a named POSIX shared-memory segment can be rewritten by any
process of the same user between the reference worker's write and the controller's read.

What catches it: large tensors now travel in sealed memory files (memfd, F_SEAL_WRITE) whose
descriptors are passed over each worker's private socket: they have no name to open. The
candidate's /dev/shm is also a fresh, empty tmpfs of its own mount namespace. The candidate
computes an honest softmax and is verified.
"""

import mmap
import os

import torch
import torch.nn as nn

_TOUCHED: list[str] = []


def _zero_every_segment() -> None:
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return
    for name in names:
        try:
            with open(os.path.join("/dev/shm", name), "r+b") as segment:
                size = os.fstat(segment.fileno()).st_size
                if size:
                    with mmap.mmap(segment.fileno(), size) as mapped:
                        mapped[:] = bytes(size)
                        _TOUCHED.append(name)
        except OSError:
            pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _zero_every_segment()
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
