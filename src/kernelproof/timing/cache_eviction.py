"""Evicting one call's data from the CPU caches, line by line.

A cold-cache measurement needs the call's inputs, the model's tensors and the memory it writes
to out of every cache level. Writing a buffer twice the size of the last-level cache does that
(and more: it also evicts code and the framework's own state), but costs 5-10 ms per call here,
ten times a typical kernel, so most of a timing budget went to flushing. Flushing exactly the
lines the call will touch (``clflush`` on x86, ``dc civac`` on ARM) costs microseconds per MiB.

The instruction has no Python binding, so a ten-line C helper is compiled once per machine into
the kernelproof cache (``cc``, about 0.2 s) and loaded with ctypes. Where no C compiler or no
supported architecture is available, :func:`load_line_evictor` returns None and the timer falls
back to the buffer flush.

The limit, stated in the report: tensors a candidate hides from Python (inside a C++ object)
are not evicted, so they may stay warm; ``--cache-flush full`` evicts everything.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelproof.timing.c_helper import load_c_helper

#: The helper: flush every line of [start, start + length) from all cache levels, then fence
#: so that the timed call starts only once the lines are gone.
EVICT_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

static uintptr_t line_bytes(void) {
    static uintptr_t cached = 0;
    if (!cached) {
        long reported = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
        cached = reported > 0 ? (uintptr_t)reported : 64;
    }
    return cached;
}

void kp_evict(const void *start, size_t length) {
    const uintptr_t line = line_bytes();
    uintptr_t p = (uintptr_t)start & ~(line - 1);
    const uintptr_t end = (uintptr_t)start + length;
#if defined(__x86_64__)
    __asm__ volatile("mfence" ::: "memory");
    for (; p < end; p += line) __asm__ volatile("clflush (%0)" :: "r"(p) : "memory");
    __asm__ volatile("mfence" ::: "memory");
#elif defined(__aarch64__)
    for (; p < end; p += line) __asm__ volatile("dc civac, %0" :: "r"(p) : "memory");
    __asm__ volatile("dsb ish" ::: "memory");
#else
#error "no cache-line flush instruction known for this architecture"
#endif
}
"""


@dataclass(frozen=True)
class LineEvictor:
    """Flushes the cache lines of tensors' storages."""

    library: Any
    path: Path

    def evict(self, tensors: Iterable[Any]) -> int:
        """Evict every storage behind ``tensors`` (each once). Returns the bytes evicted."""
        seen: set[int] = set()
        total = 0
        for tensor in tensors:
            if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
                continue
            storage = tensor.untyped_storage()
            start, length = storage.data_ptr(), storage.nbytes()
            if start in seen or length == 0:
                continue
            seen.add(start)
            self.library.kp_evict(ctypes.c_void_p(start), ctypes.c_size_t(length))
            total += length
        return total


def load_line_evictor() -> LineEvictor | None:
    """The compiled helper, built on first use and cached; None where it cannot be built."""
    library = load_c_helper("evict", EVICT_SOURCE)
    if library is None:
        return None
    library.kp_evict.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    library.kp_evict.restype = None
    return LineEvictor(library=library, path=Path(library._name))


def reachable_tensors(model: Any) -> list[Any]:
    """Tensors a model holds where Python can see them: parameters, buffers, and tensor
    attributes of every submodule (alone or in a list, tuple or dict), such as pre-packed
    weights an optimised candidate keeps outside its registered parameters."""
    modules = list(model.modules()) if isinstance(model, torch.nn.Module) else [model]
    found: list[Any] = []
    for module in modules:
        for value in getattr(module, "__dict__", {}).values():
            items = (
                value.values()
                if isinstance(value, dict)
                else (value if isinstance(value, (list, tuple)) else (value,))
            )
            found += [item for item in items if isinstance(item, torch.Tensor)]
    return found
