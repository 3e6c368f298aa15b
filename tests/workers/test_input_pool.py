"""The timed-input pool: both workers see the same data, no two calls see the same data, and
values stay in the task's domain."""

from __future__ import annotations

import platform

import pytest
import torch

from kernelproof.harness.input_pool import InputPool


def _builder(shape: tuple[int, ...], positive: bool = False, dtype: torch.dtype = torch.float32):
    def build(seed: int) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(*shape, generator=generator)
        return [(x.abs() + 0.5 if positive else x).to(dtype), 3]

    return build


SEEDS = [11, 12, 13, 14, 15, 16, 17, 18]


def test_two_pools_fed_the_same_seeds_hold_the_same_inputs():
    """The reference and the candidate worker each hold a pool: their calls must agree."""
    first, second = InputPool(_builder((64, 512))), InputPool(_builder((64, 512)))
    for seed in SEEDS:
        a, b = first.inputs_for(seed), second.inputs_for(seed)
        assert torch.equal(a[0], b[0]) and a[1] == b[1] == 3


def test_no_two_calls_see_the_same_data_and_no_row_survives_whole():
    pool = InputPool(_builder((64, 512)))
    seen: list[torch.Tensor] = []
    for seed in SEEDS:
        x = pool.inputs_for(seed)[0].clone()
        for earlier in seen:
            assert not torch.equal(x, earlier)
            # A candidate that kept earlier inputs finds none of its rows again whole.
            rows = {tuple(r.tolist()) for r in earlier}
            assert not any(tuple(r.tolist()) in rows for r in x)
        seen.append(x)
    # The values change too, not only their places: a full reduction differs every call.
    sums = [float(x.double().sum()) for x in seen[2:]]
    assert len(set(sums)) == len(sums)


def _nearest_built(x: torch.Tensor, built: list[torch.Tensor]) -> torch.Tensor:
    """For each element of ``x``, the closest value of the pool's built sets."""
    union = torch.cat([b.flatten() for b in built]).double().sort().values
    flat = x.flatten().double()
    above = torch.searchsorted(union, flat).clamp_(max=union.numel() - 1)
    below = (above - 1).clamp_(min=0)
    closer = (union[above] - flat).abs() < (union[below] - flat).abs()
    return torch.where(closer, union[above], union[below])


def test_values_move_between_the_pool_s_sets_and_by_a_small_fraction_of_themselves():
    """The domain is kept: a positive input stays positive, and each value stays within
    2^-12 of a value the task's own generator made."""
    pool = InputPool(_builder((64, 512), positive=True))
    built = [pool.inputs_for(seed)[0].clone() for seed in SEEDS[:2]]
    for seed in SEEDS[2:]:
        x = pool.inputs_for(seed)[0]
        assert bool((x > 0).all())
        source = _nearest_built(x, built)
        assert float(((x.flatten().double() - source).abs() / source).max()) <= 2.0**-12


def test_every_floating_element_of_a_pooled_use_is_new():
    """HACKS row 38: no timed input lets an output be replayed from an earlier one. Moved
    blocks alone recur (an element-wise candidate remembered their outputs): every element is
    also moved off every value seen before, by far more than float32 rounding, so the output
    of the block it came from is wrong by far more than the comparator allows."""
    pool = InputPool(_builder((64, 512)))
    built = [pool.inputs_for(seed)[0].clone() for seed in SEEDS[:2]]
    seen = {v for b in built for v in b.view(torch.int32).flatten().tolist()}
    # The value each element was moved from: the same bits above the 11 drawn ones.
    source_of = {v & ~0x7FF: v for v in seen}
    for seed in SEEDS[2:]:
        x = pool.inputs_for(seed)[0]
        bits = x.view(torch.int32).flatten().tolist()
        # A repeat needs the element's 11 drawn bits to hit one of a few earlier values.
        assert sum(v in seen for v in bits) / len(bits) < 0.02
        seen.update(bits)
        sources = (
            torch.tensor([source_of[v & ~0x7FF] for v in bits], dtype=torch.int32)
            .view(torch.float32)
            .double()
        )
        relative = (x.flatten().double() - sources).abs() / sources.abs()
        # Half the elements moved by more than 2^-15 of themselves: a float32 output replayed
        # from the moved block is off by ~1e-4, a thousand times the reference's own error.
        assert float(relative.median()) > 2.0**-15


def test_zeros_and_non_finite_values_are_never_perturbed():
    from kernelproof.harness.input_pool import perturb

    for dtype, bits in (
        (torch.float32, 11),
        (torch.float64, 26),
        (torch.float16, 5),
        (torch.bfloat16, 3),
    ):
        x = torch.tensor(
            [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1.0, -3.0] * 8, dtype=dtype
        )
        y = x.clone()
        perturb(y, bits, 12345, 8)
        assert torch.equal(y[:5].view(torch.uint8), x[:5].view(torch.uint8)), dtype
        assert bool((torch.sign(y[5:]) == torch.sign(x[5:])).all())
        assert not torch.equal(y, x), dtype


def test_small_sets_are_built_fresh_for_every_call():
    pool = InputPool(_builder((4, 8)))
    for seed in SEEDS[:4]:
        assert torch.equal(pool.inputs_for(seed)[0], _builder((4, 8))(seed)[0])
    assert pool.sets == []


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64]
)
def test_the_compiled_path_and_the_torch_path_give_the_same_sets(
    monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype
):
    """One worker may take the compiled gather where the other cannot (no C compiler): their
    sets must still agree, call for call, perturbation included. Streamed tensors are named,
    so the timer does not flush them again; those of the torch path never are."""
    from kernelproof.harness import block_gather

    compiled = InputPool(_builder((64, 512), dtype=dtype))
    plain = InputPool(_builder((64, 512), dtype=dtype))
    gather = block_gather._block_gather
    for seed in SEEDS:
        a = compiled.inputs_for(seed, stream=True)
        monkeypatch.setattr(block_gather, "_block_gather", None)
        b = plain.inputs_for(seed, stream=True)
        monkeypatch.setattr(block_gather, "_block_gather", gather)
        assert torch.equal(a[0].view(-1).view(torch.uint8), b[0].view(-1).view(torch.uint8))
        assert a[1] == b[1] == 3
        assert plain.streamed == []
    if gather is not None and platform.machine() in ("x86_64", "AMD64"):
        assert len(compiled.streamed) == 1 and compiled.streamed[0] is a[0]


def test_a_large_set_is_not_streamed():
    pool = InputPool(_builder((2048, 1024)))  # 8 MiB
    for seed in SEEDS[:4]:
        pool.inputs_for(seed, stream=True)
        assert pool.streamed == []


def test_a_block_map_that_names_a_missing_block_is_refused():
    """The compiled gather reads where the map says: a corrupted map must not read outside
    the pool's storage."""
    from kernelproof.harness import block_gather

    gather = block_gather.load_block_gather()
    if gather is None:  # no C compiler here: the torch path is all there is
        assert block_gather._block_gather is None
        return
    storage = torch.randn(8, 16)
    holdings = torch.arange(8, dtype=torch.int64).view(2, 4)
    out = torch.empty(4, 16)
    gather.use(holdings, 0, 1, (1, 1, 0), (1, 0), out, storage, True)
    assert torch.equal(out, storage[torch.tensor([4, 1, 2, 3])])  # position 0 traded
    holdings[0, 2] = 99
    with pytest.raises(RuntimeError, match="block it does not have"):
        gather.use(holdings, 0, 1, (1, 1, 0), (1, 0), out, storage, True)


def test_a_small_set_is_pooled_in_small_blocks_and_never_repeats():
    """A 16 KiB input (a ~5 us softmax) is pooled too, cut into enough blocks that a long
    timing phase never sees the same data twice."""
    pool = InputPool(_builder((4, 1024)))
    seen = {pool.inputs_for(seed, stream=True)[0].numpy().tobytes() for seed in range(2000)}
    assert pool.sets and len(pool.blocks[0].holdings[0]) >= 256
    assert len(seen) == 2000
