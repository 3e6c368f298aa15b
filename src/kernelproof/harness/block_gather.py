"""An input pool's change and gather in one C call, written past the caches.

A pooled input set is changed before each timed call (:mod:`kernelproof.harness.input_pool`):
an eighth of its block map traded with another set's, then its blocks gathered in an affine
order into the call's input. In torch that is half a dozen small tensor ops on the map (a few
microseconds each) and an ``index_select`` whose writes land in the cache, which the timer's
cold-cache flush then evicts again, line by line. For the softmax example's 1 MiB input, next to
a 124 us call, that was 94 us of change and gather plus 32 us of flush per call.

Here the map is changed in place and the blocks copied with streaming (non-temporal) stores,
which go to memory without filling the cache: the input is as cold as the flush would leave it,
so the flush skips it. Measured here: 73 us for the whole, instead of 126. Streaming pays only
for sets up to :data:`~kernelproof.harness.input_pool.MAX_STREAMED_BYTES`: for the LayerNorm
suite task's 16 MiB it took 3.5 ms a call against 2.5 ms for ``index_select`` and 0.5 ms of
flush, and its samples per side fell from ~120 to ~65; larger sets are copied plainly here
and flushed as before.

The arithmetic is the torch path's (:meth:`~kernelproof.harness.input_pool.PooledBlocks.change`),
position for position, so both workers' sets stay equal whichever path each takes. Streaming
needs x86-64 and 16-byte aligned blocks; elsewhere the blocks are copied plainly, and the call
says the input was not streamed (so it is flushed as before).
"""

from __future__ import annotations

import ctypes
from typing import Any

from kernelproof.timing.c_helper import load_c_helper

GATHER_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Trade positions (t_step*i + t_offset) mod count, i < traded, between the two maps; then copy
   the blocks of `mine` in the order (o_step*i + o_offset) mod count into dst, width bytes each.
   Streaming stores when `stream` is set and the machine and alignment allow. Returns 1 when
   every block went by streaming stores, 0 when copied plainly, -1 on arguments out of range
   or a block number outside [0, blocks). */
int kp_pool_use(int64_t *mine, int64_t *theirs, int64_t count, int64_t traded,
                int64_t t_step, int64_t t_offset, int64_t o_step, int64_t o_offset,
                char *dst, const char *storage, int64_t blocks, int64_t width, int64_t stream) {
    if (count <= 0 || traded < 0 || traded > count || t_step < 0 || t_step >= count
            || t_offset < 0 || t_offset >= count || o_step < 0 || o_step >= count
            || o_offset < 0 || o_offset >= count)
        return -1;
    /* Positions advance by the step and wrap by one subtraction: a 64-bit division per block
       cost more than the copy itself for 64-byte blocks. */
    int64_t p = t_offset;
    for (int64_t i = 0; i < traded; i++) {
        int64_t held = mine[p];
        mine[p] = theirs[p];
        theirs[p] = held;
        p += t_step;
        if (p >= count) p -= count;
    }
    int streamed = 0;
#if defined(__x86_64__)
    streamed = stream && ((((uintptr_t)dst | (uintptr_t)storage | (uintptr_t)width) & 15) == 0);
#endif
    p = o_offset;
    for (int64_t i = 0; i < count; i++) {
        int64_t block = mine[p];
        p += o_step;
        if (p >= count) p -= count;
        if (block < 0 || block >= blocks) return -1;
        const char *from = storage + block * width;
        char *to = dst + i * width;
#if defined(__x86_64__)
        if (streamed) {
            for (int64_t k = 0; k < width; k += 16)
                _mm_stream_si128((__m128i *)(to + k), _mm_load_si128((const __m128i *)(from + k)));
            continue;
        }
#endif
        memcpy(to, from, (size_t)width);
    }
#if defined(__x86_64__)
    _mm_sfence();
#endif
    return streamed;
}
"""


class BlockGather:
    """The compiled ``kp_pool_use``."""

    def __init__(self, library: Any) -> None:
        self.function = library.kp_pool_use
        self.function.argtypes = ([ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int64] * 6
                                  + [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int64] * 3)
        self.function.restype = ctypes.c_int

    def use(self, holdings: Any, index: int, other: int, traded: tuple[int, int, int],
            order: tuple[int, int], out: Any, storage: Any, stream: bool) -> bool:
        """Trade ``traded`` = (length, step, offset) positions of the block maps of sets
        ``index`` and ``other`` (rows of ``holdings``), gather set ``index``'s blocks in
        ``order`` = (step, offset) into ``out``, past the caches if ``stream`` and the
        machine allows. True when streamed."""
        count = holdings.shape[1]
        row = holdings.data_ptr()
        done = self.function(row + 8 * index * count, row + 8 * other * count, count, *traded,
                             *order, out.data_ptr(), storage.data_ptr(), storage.shape[0],
                             storage.shape[1] * storage.element_size(), int(stream))
        if done < 0:
            raise RuntimeError("an input pool's block map holds a block it does not have, or its "
                               "change is out of range")
        return bool(done)


def load_block_gather() -> BlockGather | None:
    library = load_c_helper("pool-gather", GATHER_SOURCE)
    return BlockGather(library) if library is not None else None


#: Loaded (and built on a machine's first run) at import, in the forkserver, before any
#: candidate exists.
_block_gather = load_block_gather()
