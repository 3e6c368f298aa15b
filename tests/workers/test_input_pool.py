"""The timed-input pool: both workers see the same data, no two calls see the same data, and
values stay in the task's domain."""

from __future__ import annotations

import torch

from kernelproof.workers.input_pool import InputPool


def _builder(shape: tuple[int, ...], positive: bool = False):
    def build(seed: int) -> list[torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(*shape, generator=generator)
        return [x.abs() + 0.5 if positive else x, 3]

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


def test_values_only_move_between_the_pool_s_sets():
    pool = InputPool(_builder((64, 512), positive=True))
    built = [pool.inputs_for(seed)[0].clone() for seed in SEEDS[:2]]
    union = torch.cat([b.flatten() for b in built]).sort().values
    for seed in SEEDS[2:]:
        x = pool.inputs_for(seed)[0]
        assert bool((x > 0).all())
        assert bool(torch.isin(x.flatten(), union).all())


def test_small_sets_are_built_fresh_for_every_call():
    pool = InputPool(_builder((4, 8)))
    for seed in SEEDS[:4]:
        assert torch.equal(pool.inputs_for(seed)[0], _builder((4, 8))(seed)[0])
    assert pool.sets == []
