"""Timing one call inside a worker: cache flush, the clock, and the CUDA specifics.

The clock and the synchronize functions are bound when this module is imported, which happens
in the forkserver before any candidate exists: a candidate that later replaces
``time.perf_counter_ns`` or ``torch.cuda.synchronize`` cannot change what the harness measures
(and the tamper check reports that it tried).
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kernelproof.timing.cache_eviction import LineEvictor, load_line_evictor

_clock_ns = time.perf_counter_ns
_cuda_synchronize = torch.cuda.synchronize
_CudaEvent = torch.cuda.Event

#: Loaded (and built on a machine's first run) at import, which happens in the forkserver:
#: before any candidate exists and before the workers' audit hooks are installed.
_line_evictor = load_line_evictor()

#: Fallback last-level cache size when /sys does not say (a common server LLC).
DEFAULT_LLC_BYTES = 32 << 20

#: The flush buffer is this many times the cache it must evict: one pass over a buffer the
#: size of the cache leaves part of it resident under non-LRU replacement.
FLUSH_FACTOR = 2

#: ``cudaLimitPersistingL2CacheSize`` in ``cudaLimit``: a persisting-L2 window survives a
#: naive flush (HACKS row 25), so the limit is reset to 0 before timing.
CUDA_LIMIT_PERSISTING_L2 = 0x06


def last_level_cache_bytes() -> int:
    """The largest CPU cache reported in /sys, or a default."""
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip().upper()
        multiplier = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * multiplier)
    return max(sizes, default=DEFAULT_LLC_BYTES)


def reset_persisting_l2() -> bool:
    """Set the persisting-L2 limit to 0. Returns whether the CUDA runtime accepted it."""
    for name in ("libcudart.so", "libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0"):
        try:
            runtime = ctypes.CDLL(name)
        except OSError:
            continue
        return runtime.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2, ctypes.c_size_t(0)) == 0
    return False


@dataclass
class CallTimer:
    """Times calls on one device, flushing the cache before each unless ``hot``.

    On CPU with ``cache_flush="data"`` the flush evicts the lines of the call's inputs and of
    the tensors it is told are resident (the model's); otherwise a buffer twice the size of
    the last-level cache (the L2 on CUDA) is written.
    """

    device: str
    hot: bool = False
    flush_bytes: int = 0
    l2_reset: bool = False
    cache_flush: str = "data"
    evictor: LineEvictor | None = None
    _buffer: Any = None
    _events: list[Any] = field(default_factory=list)

    @classmethod
    def for_device(cls, device: str, *, hot: bool = False, cache_flush: str = "data") -> CallTimer:
        if device == "cuda":
            properties = torch.cuda.get_device_properties(torch.cuda.current_device())
            flush = FLUSH_FACTOR * int(getattr(properties, "L2_cache_size", 0) or (50 << 20))
            timer = cls(
                device=device,
                hot=hot,
                flush_bytes=flush,
                l2_reset=reset_persisting_l2(),
                cache_flush=cache_flush,
            )
        else:
            evictor = _line_evictor if cache_flush == "data" and not hot else None
            timer = cls(
                device=device,
                hot=hot,
                evictor=evictor,
                cache_flush=cache_flush,
                flush_bytes=0 if evictor else FLUSH_FACTOR * last_level_cache_bytes(),
            )
        if not hot and timer.evictor is None:
            timer._buffer = torch.empty(timer.flush_bytes // 4, dtype=torch.float32, device=device)
        return timer

    @property
    def flush_method(self) -> str:
        """How caches are flushed before each call, in words for the report."""
        if self.hot:
            return "none (hot caches)"
        if self.evictor is not None:
            return "data: the cache lines of the call's inputs and the model's tensors"
        cache = "L2" if self.device == "cuda" else "last-level cache"
        return f"full: a {self.flush_bytes >> 20} MiB buffer write ({FLUSH_FACTOR}x the {cache})"

    def flush(self, data: list[Any] | tuple[Any, ...] = ()) -> None:
        if self.evictor is not None:
            self.evictor.evict(data)
        elif self._buffer is not None:
            self._buffer.fill_(1.0)  # a write pass: evicts and dirties every line
            if self.device == "cuda":
                _cuda_synchronize()

    def time_call(
        self,
        fn: Callable[..., Any],
        inputs: list[Any],
        resident: list[Any] | tuple[Any, ...] = (),
        cold: list[Any] | tuple[Any, ...] = (),
    ) -> tuple[float, Any]:
        """Seconds taken by ``fn(*inputs)`` and its result. The cache is flushed first:
        entirely, or (data flush) the lines of ``inputs`` and of the ``resident`` tensors,
        except the inputs in ``cold``, which were written past the caches."""
        self.flush([*(x for x in inputs if not any(x is c for c in cold)), *resident])
        if self.device == "cuda":
            return self._time_cuda(fn, inputs)
        started = _clock_ns()
        output = fn(*inputs)
        return (_clock_ns() - started) * 1e-9, output

    def _time_cuda(self, fn: Callable[..., Any], inputs: list[Any]) -> tuple[float, Any]:
        start, end = _CudaEvent(enable_timing=True), _CudaEvent(enable_timing=True)
        _cuda_synchronize()
        start.record()
        output = fn(*inputs)
        # A device-wide synchronize before the end event: work the candidate queued on side
        # streams (HACKS row 6) is inside the measured interval.
        _cuda_synchronize()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3, output

    def clock_s(self) -> float:
        return _clock_ns() * 1e-9


@dataclass
class GraphReplay:
    """CUDA-graph timing: the call captured once on static inputs, replayed per timed call.

    New inputs are copied into the static buffers before each replay (untimed), so every replay
    still computes on fresh values.
    """

    static_inputs: list[Any]
    static_output: Any
    graph: Any

    @classmethod
    def capture(cls, fn: Callable[..., Any], inputs: list[Any]) -> GraphReplay:
        static = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # warm-up on a side stream, as graph capture requires
                fn(*static)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            output = fn(*static)
        return cls(static_inputs=static, static_output=output, graph=graph)

    def load(self, inputs: list[Any]) -> None:
        for static, fresh in zip(self.static_inputs, inputs):
            if isinstance(static, torch.Tensor):
                static.copy_(fresh)

    def replay(self) -> Any:
        self.graph.replay()
        return self.static_output
