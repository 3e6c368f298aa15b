"""A pool of input sets for timed calls, reused with a fresh change before every use.

Building a set from its seed runs the task's ``get_inputs()``: for the LayerNorm suite task
(16 MiB of inputs, a ~2 ms call) that took most of each timed call's wall time, and the quick
budget got 6 samples per side. A pool builds a few sets once per prepared model and, before
each later use, changes the chosen set, deterministically from the call's seed:

1. **exchange**: a random eighth of its blocks (a power of two of elements, at most a quarter
   of a row, and small enough for :data:`MIN_BLOCKS` blocks) trade places with the blocks at
   the same positions of another set of the pool, so the values the set holds (their sum,
   their sorted order) differ from any earlier use;
2. **scramble**: all of its blocks are moved by a random affine permutation
   (``i -> (a*i + b) mod n``), so no region keeps its place or its neighbours;
3. **perturb**: the low half of every floating element's mantissa is XORed with bits drawn
   for that element and that use (:func:`perturb`), on the way into the call's input.

The stored blocks themselves never change, only where they are: the pool keeps every set's
blocks of an input in one tensor, and each set as a map from its positions to blocks. The
exchange swaps entries of two maps (an eighth of a few thousand integers), and the scramble
gathers the set's blocks in their new order (perturbing them on the way) into the call's
input: one pass over the data, where moving the
blocks of both sets in place took two and a half (measured in a timed loop with the cache
flushed between calls: 121 against 91 us for the softmax example's 1 MiB, next to a 120 us
call; 2.5 against 1.6 ms for 16 MiB). On the CPU all three steps run in one C call, whose writes
go past the caches for sets up to :data:`MAX_STREAMED_BYTES`
(:mod:`kernelproof.harness.block_gather`: 73 us and no flush for that 1 MiB).

Why both, and why all of the set (the design says "a random part"): a change of a part only
lets a candidate that keeps its previous input and output recompute just what changed (rows
of a matmul, tiles of a convolution) and post a speedup it did not earn; a move alone keeps
the multiset, so a full reduction or a sort could be replayed. Moved blocks alone still
recur: an element-wise candidate remembered each block's output and answered a pooled call
with one gather of them (``examples/hacks/verifier/38_memoise_pool_blocks.py``). The
perturbation closes that: **every floating element of every timed input is new** (a fresh draw
per element and use), so no output can be derived from an earlier one more cheaply than by
computing it, and no two timed calls see the same data. Values only move between the pool's
sets and by a small fraction of themselves (signs, zeros, Inf and NaN kept), so each stays
inside the task's domain (a positive input stays positive; integer inputs, indices, are moved
but never perturbed, so they stay valid). Structure *across* elements (a
symmetric matrix, sorted rows) is not kept: a task whose inputs need it sets
``POLICY = {"input_pool": False}`` and its timed calls get fresh builds as before.

The reference and the candidate worker receive the same seeds in the same order, so their
pools go through the same states and a timed call's outputs stay comparable.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelproof.harness import block_gather

#: Sets per pool: two, the fewest an exchange needs. Every set is built once (a build is the
#: cost a pool saves), and more sets would not change what a candidate can learn: every use
#: changes the whole set.
POOL_SETS = 2

#: Sets smaller than this are built fresh for every call: they cannot be cut into
#: :data:`MIN_BLOCKS` blocks of 16 bytes. Above it a pooled use costs microseconds where a
#: build (seeding every RNG, then ``get_inputs``) cost 40-50 us here, ten times a 5 us call.
MIN_POOLED_BYTES = 4 << 10

#: A movable input is cut into at least this many blocks per set, where it can be: enough
#: arrangements (affine orders times the blocks exchanged) that no two calls of a timing
#: phase see the same data even for a small tensor.
MIN_BLOCKS = 256

#: Elements moved together at most. Larger blocks move faster (index_select copies one block
#: per step: 16-element blocks cost 12 ms for 16 MiB here, against 5 ms for the LayerNorm call
#: itself), but a block never exceeds a quarter of the last dimension
#: (:data:`PIECES_PER_ROW`), so every row is cut up and scattered.
MAX_BLOCK_ELEMENTS = 256

#: A row of the last dimension is split into at least this many blocks: a row that moved whole
#: would let a candidate reuse its old output row (a matmul's row of A against fixed weights).
PIECES_PER_ROW = 4

#: Sets written past the caches (``stream``) at most: streaming stores saved the flush of a
#: 1 MiB set (73 against 61 + 32 us) but cost more than gather and flush together for 16 MiB
#: (3.5 against 3.0 ms) on this machine (see :mod:`kernelproof.harness.block_gather`).
MAX_STREAMED_BYTES = 4 << 20

#: One block in this many trades places with another set's on each use.
EXCHANGED_SHARE = 8

#: Per floating dtype: its code for the compiled gather (``kp_perturb``) and the low mantissa
#: bits every pooled use draws afresh for each element, half the mantissa (rounded down). A
#: value then moves by up to 2^-12 of itself in float32 (2^-26, 2^-5, 2^-4 in float64,
#: float16, bfloat16): thousands of times the comparator's tolerance, so that an output
#: replayed from the block an input was moved from is wrong, and far too little to leave the
#: task's domain (signs, zeros, Inf and NaN never change; see :func:`perturb`).
PERTURBED: dict[torch.dtype, tuple[int, int]] = {
    torch.float32: (1, 11),
    torch.float64: (2, 26),
    torch.float16: (3, 5),
    torch.bfloat16: (4, 3),
}

#: Exponent bits per floating dtype (all zeros: zero or subnormal; all ones: Inf or NaN), and
#: the integer dtype its bits are read as.
_EXPONENT: dict[torch.dtype, tuple[int, torch.dtype]] = {
    torch.float32: (0x7F800000, torch.int32),
    torch.float64: (0x7FF0000000000000, torch.int64),
    torch.float16: (0x7C00, torch.int16),
    torch.bfloat16: (0x7F80, torch.int16),
}

_MASK_32 = (1 << 32) - 1


@dataclass
class InputPool:
    """The input sets of one timed participant at one prepared shape."""

    build: Callable[[int], list[Any]]
    """Builds a fresh set from a seed (the task's ``get_inputs`` under it)."""

    sets: list[list[Any]] = field(default_factory=list)
    capacity: int | None = None
    uses: int = 0
    blocks: dict[int, PooledBlocks] = field(default_factory=dict)
    """Per input position that moves: every set's blocks and where each set's are."""

    streamed: list[Any] = field(default_factory=list)
    """The tensors of the last set :meth:`inputs_for` returned that were written past the
    caches (:mod:`kernelproof.harness.block_gather`): already as cold as a flush leaves them."""

    def inputs_for(self, seed: int, *, stream: bool = False) -> list[Any]:
        """The inputs of the timed call with ``seed``: a fresh set while the pool fills (and
        always for small sets), then a pooled set changed by the seed. ``stream``: write the
        changed set past the caches where the machine can (a cold-cache call's inputs)."""
        self.streamed = []
        if not self.capacity or len(self.sets) < self.capacity:
            fresh = self.build(seed)
            if self.capacity is None:
                self.capacity = _capacity(fresh)
            if len(self.sets) < self.capacity:
                self.sets.append(fresh)
            return fresh
        if not self.blocks:
            self.blocks = _pooled_blocks(self.sets)
        rng = Draws(seed)
        index = self.uses % len(self.sets)
        self.uses += 1
        other = (index + 1 + rng.below(len(self.sets) - 1)) % len(self.sets)
        chosen = self.sets[index]
        for position, pooled in self.blocks.items():
            chosen[position], streamed = pooled.change(index, other, rng, stream=stream)
            if streamed:
                self.streamed.append(chosen[position])
        return chosen

    def settle_inputs(self, seed: int) -> list[Any]:
        """Inputs for the untimed call that opens a batch: the set the next timed call will
        change before it uses it (so nothing this call leaves behind can be replayed), or a
        fresh build while the pool fills. The pool is left as it was."""
        if self.capacity and len(self.sets) >= self.capacity:
            return self.sets[self.uses % len(self.sets)]
        return self.build(seed)


def _capacity(example: list[Any]) -> int:
    size = sum(x.numel() * x.element_size() for x in example if isinstance(x, torch.Tensor))
    if size < MIN_POOLED_BYTES or not any(_movable(x) for x in example):
        return 0
    return POOL_SETS


def _movable(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_contiguous() and x.numel() > 1


@dataclass
class PooledBlocks:
    """One input position's blocks of every set, and which blocks each set holds in order."""

    storage: torch.Tensor
    """Every set's blocks, ``(sets * count, width)``; never written after the pool fills."""
    holdings: torch.Tensor
    """``(sets, count)`` block numbers: set ``k``'s blocks in order."""
    shape: torch.Size

    def change(
        self, index: int, other: int, rng: Draws, *, stream: bool = False
    ) -> tuple[torch.Tensor, bool]:
        """Exchange an eighth of set ``index``'s blocks with set ``other``'s (both change),
        then its blocks in a random affine order, gathered into a new tensor. Returns it and
        whether it was written past the caches (``stream``, on the CPU, where the compiled
        gather loads and the blocks are aligned)."""
        count = self.holdings.shape[1]
        traded_length = max(1, count // EXCHANGED_SHARE)
        traded, order = _affine_params(count, rng), _affine_params(count, rng)
        kind, bits = PERTURBED.get(self.storage.dtype, (0, 1))
        key = rng.next() & _MASK_32
        gather = block_gather._block_gather
        if gather is not None and self.storage.device.type == "cpu":
            out = torch.empty(self.shape, dtype=self.storage.dtype)
            stream = stream and out.numel() * out.element_size() <= MAX_STREAMED_BYTES
            streamed = gather.use(
                self.holdings,
                index,
                other,
                (traded_length, *traded),
                order,
                out,
                self.storage,
                stream,
                (kind, bits, key),
            )
            return out, streamed
        mine, theirs = self.holdings[index], self.holdings[other]
        device = self.holdings.device
        positions = _affine(traded_length, count, *traded, device)
        held = mine.index_select(0, positions)
        mine.index_copy_(0, positions, theirs.index_select(0, positions))
        theirs.index_copy_(0, positions, held)
        blocks = mine.index_select(0, _affine(count, count, *order, device))
        out = self.storage.index_select(0, blocks).view(self.shape)
        if kind:
            perturb(out, bits, key, self.storage.shape[1])
        return out, False


def _pooled_blocks(sets: list[list[Any]]) -> dict[int, PooledBlocks]:
    """The blocks of each input position that moves (contiguous, of one shape and dtype in
    every set); other positions keep the value their set was built with."""
    pooled: dict[int, PooledBlocks] = {}
    for position, values in enumerate(zip(*sets)):
        first = values[0]
        if not all(
            _movable(x) and x.shape == first.shape and x.dtype == first.dtype for x in values
        ):
            continue
        width = _block_width(first)
        storage = torch.cat([x.reshape(-1, width) for x in values])
        count = first.numel() // width
        holdings = torch.arange(len(values) * count, dtype=torch.int64, device=first.device).view(
            len(values), count
        )
        pooled[position] = PooledBlocks(storage=storage, holdings=holdings, shape=first.shape)
    return pooled


def perturbation_bits(
    count: int, width: int, key: int, bits: int, device: Any = None
) -> torch.Tensor:
    """The ``bits``-bit draws the compiled gather makes (``KP_DRAW``, ``KP_STEP``) for
    elements ``0..count-1`` of a use keyed ``key`` whose blocks hold ``width`` elements, as
    int64 (every product stays below 2^63)."""
    index = torch.arange(count, dtype=torch.int64, device=device)
    block = torch.div(index, width, rounding_mode="floor")
    drawn = block.bitwise_and_(_MASK_32).bitwise_xor_(key).mul_(0x61C88647)
    drawn.add_(index.remainder_(width).mul_(0x9E3779B9)).bitwise_and_(_MASK_32)
    return drawn.bitwise_right_shift_(32 - bits)


def perturb(x: torch.Tensor, bits: int, key: int, width: int) -> None:
    """XOR, in place, the low ``bits`` bits of the mantissa of every element of the contiguous
    floating tensor ``x`` (gathered in blocks of ``width`` elements) whose exponent is neither
    all zeros (zero, subnormal) nor all ones (Inf, NaN) with :func:`perturbation_bits`: the
    compiled gather's ``kp_perturb``, bit for bit.

    This is what makes a pooled input new (HACKS row 38): the blocks the pool moves had all
    been seen before, so an element-wise candidate could replay the outputs it remembered for
    them. After the XOR every floating element differs from every earlier one by a draw of its
    own (2^-bits of a repeat per element), and replaying an output computed for the block it was
    moved from is off by up to 2^-(mantissa - bits) of each input value. Deriving the new output
    from the old one costs a pass of the same work over the differences: no cheaper than
    computing it. Signs, zeros and non-finite values never change, and each value stays within
    that fraction of itself, so the input stays in the task's domain."""
    exponent, as_int = _EXPONENT[x.dtype]
    view = x.view(-1).view(as_int)
    drawn = perturbation_bits(view.numel(), width, key, bits, x.device)
    high = view & exponent
    drawn.masked_fill_((high == 0) | (high == exponent), 0)
    view.bitwise_xor_(drawn.to(as_int))


def _block_width(x: torch.Tensor) -> int:
    """The largest power of two that divides the tensor, is at most a quarter of its last
    dimension, at most :data:`MAX_BLOCK_ELEMENTS`, and leaves :data:`MIN_BLOCKS` blocks (or
    is 1)."""
    limit = min(
        MAX_BLOCK_ELEMENTS,
        max(1, x.shape[-1] // PIECES_PER_ROW if x.dim() else 1),
        max(1, x.numel() // MIN_BLOCKS),
    )
    width = 1
    while width * 2 <= limit and x.numel() % (width * 2) == 0:
        width *= 2
    return width


class Draws:
    """Random integers from a seed (splitmix64): what a pooled use draws, the same in both
    workers. ``random.Random(seed)`` cost 5 us to seed and 1.5 us a draw here, a third of a
    small set's use; this is a few multiplications a draw. Nothing here is secret (the worker
    sees its seeds), only distinct from call to call."""

    def __init__(self, seed: int) -> None:
        self.state = seed & _MASK_64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & _MASK_64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK_64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK_64
        return z ^ (z >> 31)

    def below(self, bound: int) -> int:
        """An integer in ``[0, bound)`` (0 when ``bound`` is below 1); the modulo bias of a
        64-bit draw is negligible here."""
        return self.next() % bound if bound > 0 else 0


_MASK_64 = (1 << 64) - 1


def _affine_params(modulus: int, rng: Draws) -> tuple[int, int]:
    """``(a, b)`` of a random affine permutation ``i -> (a*i + b) mod modulus``, ``a`` prime
    to the modulus."""
    step = 1
    if modulus > 2:
        step = 1 + rng.below(modulus - 1)
        while math.gcd(step, modulus) != 1:  # the next one up: a draw costs more than a gcd
            step = step % (modulus - 1) + 1
    return step, rng.below(modulus)


def _affine(length: int, modulus: int, step: int, offset: int, device: Any) -> torch.Tensor:
    """The first ``length`` positions ``(step*i + offset) mod modulus``: distinct."""
    positions = torch.arange(length, dtype=torch.int64, device=device)
    return positions.mul_(step).add_(offset).remainder_(modulus)
