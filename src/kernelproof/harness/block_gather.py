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

Each block is perturbed on its way (:func:`kernelproof.harness.input_pool.perturb`, HACKS row
38): float32 in the copy loop itself, eight elements a step with AVX2 (four with SSE2), so that
a streamed 1 MiB use still took 24 us (53 us with SSE2 alone, 26 us without perturbing:
a C driver over this source at -O2, best of 50, on the shared development machine); other
floating dtypes through a scalar loop on a copy in the first-level cache.

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

/* The perturbation of a use keyed `key`: block `i` of the gathered input draws
   d = KP_DRAW(i, key), the high bits of one multiplication, and its element k the top `bits`
   bits of d + k * KP_STEP (a Weyl sequence: an addition per element, which the compiler
   vectorises; a multiplication per element took six times the gather). Both constants are
   below 2^32 and each product stays below 2^63, so torch's int64 arithmetic
   (input_pool.perturb) gives the same bits. The draw is XORed into the low `bits` bits of
   each floating element's mantissa, except where its exponent is all zeros (zero, subnormal)
   or all ones (Inf, NaN): signs, zeros and non-finite values stay, each other value moves by
   less than 2^-(mantissa - bits) of itself. */
#define KP_DRAW(i, key) ((((uint32_t)(i)) ^ (key)) * 0x61C88647u)
#define KP_STEP 0x9E3779B9u

#if defined(__GNUC__) && !defined(__clang__)
#define KP_VECTORISED __attribute__((optimize("O3")))
#else
#define KP_VECTORISED
#endif

KP_VECTORISED static void kp_perturb32(uint32_t *x, int64_t count, uint32_t shift,
                                       uint32_t d) {
    for (int64_t k = 0; k < count; k++) {
        uint32_t v = x[k], e = v & 0x7F800000u;
        uint32_t keep = 0u - (uint32_t)((e != 0u) & (e != 0x7F800000u));
        x[k] = v ^ (((d + (uint32_t)k * KP_STEP) >> shift) & keep);
    }
}

KP_VECTORISED static void kp_perturb64(uint64_t *x, int64_t count, uint32_t shift,
                                       uint32_t d) {
    for (int64_t k = 0; k < count; k++) {
        uint64_t v = x[k], e = v & 0x7FF0000000000000ull;
        uint64_t keep = 0ull - (uint64_t)((e != 0ull) & (e != 0x7FF0000000000000ull));
        x[k] = v ^ ((uint64_t)((d + (uint32_t)k * KP_STEP) >> shift) & keep);
    }
}

KP_VECTORISED static void kp_perturb16(uint16_t *x, int64_t count, uint32_t shift,
                                       uint32_t d, uint16_t ones) {
    for (int64_t k = 0; k < count; k++) {
        uint16_t v = x[k], e = v & ones;
        uint16_t keep = (uint16_t)(0u - (uint32_t)((e != 0u) & (e != ones)));
        x[k] = v ^ (uint16_t)(((d + (uint32_t)k * KP_STEP) >> shift) & keep);
    }
}

#if defined(__x86_64__)
/* kp_perturb32 by SSE2 instructions, from `from` to `to` (streamed when `stream`): the case
   that matters (float32), at about the cost of the copy itself; the compiler's own
   vectorisation of the loop above at -O2 cost five times the gather. */
static void kp_copy_perturbed32(char *to, const char *from, int64_t width, uint32_t shift,
                                uint32_t d, int stream) {
    const __m128i exponent = _mm_set1_epi32(0x7F800000), zero = _mm_setzero_si128();
    const __m128i step = _mm_set1_epi32((int)(4u * KP_STEP));
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    __m128i h = _mm_add_epi32(_mm_set1_epi32((int)d),
                              _mm_setr_epi32(0, (int)KP_STEP, (int)(2u * KP_STEP),
                                             (int)(3u * KP_STEP)));
    for (int64_t k = 0; k < width; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(from + k));
        __m128i e = _mm_and_si128(v, exponent);
        __m128i skip = _mm_or_si128(_mm_cmpeq_epi32(e, zero), _mm_cmpeq_epi32(e, exponent));
        v = _mm_xor_si128(v, _mm_andnot_si128(skip, _mm_srl_epi32(h, count)));
        h = _mm_add_epi32(h, step);
        if (stream) _mm_stream_si128((__m128i *)(to + k), v);
        else _mm_storeu_si128((__m128i *)(to + k), v);
    }
}

#if defined(__GNUC__)
#include <immintrin.h>
/* The same with AVX2 (eight elements a step), where the machine has it: half the SSE2 loop's
   cost. Needs 32-byte aligned blocks; the caller checks. */
__attribute__((target("avx2")))
static void kp_copy_perturbed32_avx2(char *to, const char *from, int64_t width, uint32_t shift,
                                     uint32_t d, int stream) {
    const __m256i exponent = _mm256_set1_epi32(0x7F800000), zero = _mm256_setzero_si256();
    const __m256i step = _mm256_set1_epi32((int)(8u * KP_STEP));
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    __m256i h = _mm256_add_epi32(_mm256_set1_epi32((int)d), _mm256_setr_epi32(
        0, (int)KP_STEP, (int)(2u * KP_STEP), (int)(3u * KP_STEP), (int)(4u * KP_STEP),
        (int)(5u * KP_STEP), (int)(6u * KP_STEP), (int)(7u * KP_STEP)));
    for (int64_t k = 0; k < width; k += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(from + k));
        __m256i e = _mm256_and_si256(v, exponent);
        __m256i skip = _mm256_or_si256(_mm256_cmpeq_epi32(e, zero),
                                       _mm256_cmpeq_epi32(e, exponent));
        v = _mm256_xor_si256(v, _mm256_andnot_si256(skip, _mm256_srl_epi32(h, count)));
        h = _mm256_add_epi32(h, step);
        if (stream) _mm256_stream_si256((__m256i *)(to + k), v);
        else _mm256_storeu_si256((__m256i *)(to + k), v);
    }
}
#define KP_HAS_AVX2 1
#endif
#endif

/* `kind`: 1 float32, 2 float64, 3 float16, 4 bfloat16; `block`: the block's index in the
   gathered input. */
static void kp_perturb(char *data, int64_t count, int64_t kind, int64_t bits, int64_t block,
                       uint32_t key) {
    uint32_t shift = (uint32_t)(32 - bits), d = KP_DRAW(block, key);
    if (kind == 1) kp_perturb32((uint32_t *)data, count, shift, d);
    else if (kind == 2) kp_perturb64((uint64_t *)data, count, shift, d);
    else if (kind == 3) kp_perturb16((uint16_t *)data, count, shift, d, 0x7C00u);
    else if (kind == 4) kp_perturb16((uint16_t *)data, count, shift, d, 0x7F80u);
}

/* Trade positions (t_step*i + t_offset) mod count, i < traded, between the two maps; then copy
   the blocks of `mine` in the order (o_step*i + o_offset) mod count into dst, width bytes each,
   each perturbed (kp_perturb, `kind` 0: not at all) on its way. Streaming stores when `stream`
   is set and the machine and alignment allow. Returns 1 when every block went by streaming
   stores, 0 when copied plainly, -1 on arguments out of range or a block number outside
   [0, blocks). */
int kp_pool_use(int64_t *mine, int64_t *theirs, int64_t count, int64_t traded,
                int64_t t_step, int64_t t_offset, int64_t o_step, int64_t o_offset,
                char *dst, const char *storage, int64_t blocks, int64_t width, int64_t stream,
                int64_t kind, int64_t element, int64_t bits, int64_t key) {
    if (count <= 0 || traded < 0 || traded > count || t_step < 0 || t_step >= count
            || t_offset < 0 || t_offset >= count || o_step < 0 || o_step >= count
            || o_offset < 0 || o_offset >= count || kind < 0 || kind > 4 || element <= 0
            || width % element != 0 || width > 4096 || bits < 1 || bits > 31)
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
    /* A block is perturbed in this buffer (in the first level cache) between its load and its
       store, so that the input is still written once, past the caches when streamed. */
    _Alignas(16) char buffer[4096];
#if defined(KP_HAS_AVX2)
    int avx2 = __builtin_cpu_supports("avx2");
#endif
    int64_t per_block = width / element;
    p = o_offset;
    for (int64_t i = 0; i < count; i++) {
        int64_t block = mine[p];
        p += o_step;
        if (p >= count) p -= count;
        if (block < 0 || block >= blocks) return -1;
        const char *from = storage + block * width;
        char *to = dst + i * width;
#if defined(__x86_64__)
        if (kind == 1 && width % 16 == 0) {
            /* Unstreamed, the block is copied first and perturbed where it landed: storing
               the perturbed lines straight into fresh pages cost twenty times the copy. */
            if (!streamed) memcpy(to, from, (size_t)width);
#if defined(KP_HAS_AVX2)
            if (avx2 && width % 32 == 0 && (!streamed || ((uintptr_t)to & 31) == 0)) {
                kp_copy_perturbed32_avx2(to, streamed ? from : to, width,
                                         (uint32_t)(32 - bits), KP_DRAW(i, (uint32_t)key),
                                         streamed);
                continue;
            }
#endif
            kp_copy_perturbed32(to, streamed ? from : to, width, (uint32_t)(32 - bits),
                                KP_DRAW(i, (uint32_t)key), streamed);
            continue;
        }
#endif
        if (kind) {
            memcpy(buffer, from, (size_t)width);
            kp_perturb(buffer, per_block, kind, bits, i, (uint32_t)key);
            from = buffer;
        }
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
        self.function.argtypes = (
            [ctypes.c_void_p, ctypes.c_void_p]
            + [ctypes.c_int64] * 6
            + [ctypes.c_void_p, ctypes.c_void_p]
            + [ctypes.c_int64] * 7
        )
        self.function.restype = ctypes.c_int

    def use(
        self,
        holdings: Any,
        index: int,
        other: int,
        traded: tuple[int, int, int],
        order: tuple[int, int],
        out: Any,
        storage: Any,
        stream: bool,
        perturbation: tuple[int, int, int] = (0, 1, 0),
    ) -> bool:
        """Trade ``traded`` = (length, step, offset) positions of the block maps of sets
        ``index`` and ``other`` (rows of ``holdings``), gather set ``index``'s blocks in
        ``order`` = (step, offset) into ``out``, past the caches if ``stream`` and the
        machine allows, each element perturbed by ``perturbation`` = (kind, bits, key)
        (:func:`kernelproof.harness.input_pool.perturbation_of`; kind 0: not at all). True
        when streamed."""
        count = holdings.shape[1]
        row = holdings.data_ptr()
        kind, bits, key = perturbation
        done = self.function(
            row + 8 * index * count,
            row + 8 * other * count,
            count,
            *traded,
            *order,
            out.data_ptr(),
            storage.data_ptr(),
            storage.shape[0],
            storage.shape[1] * storage.element_size(),
            int(stream),
            kind,
            storage.element_size(),
            bits,
            key,
        )
        if done < 0:
            raise RuntimeError(
                "an input pool's block map holds a block it does not have, or its "
                "change is out of range"
            )
        return bool(done)


def load_block_gather() -> BlockGather | None:
    library = load_c_helper("pool-gather", GATHER_SOURCE)
    return BlockGather(library) if library is not None else None


#: Loaded (and built on a machine's first run) at import, in the forkserver, before any
#: candidate exists.
_block_gather = load_block_gather()
