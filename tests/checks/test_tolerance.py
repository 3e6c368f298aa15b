import math

import pytest
import torch

from kernelproof.checks.tolerance import (
    _DERIVED,
    OwnError,
    TolerancePolicy,
    _working_dtype,
    compare_output,
)
from kernelproof.schema import Severity

ORACLE = TolerancePolicy()


def outputs(dtype=torch.float32, scale=1.0, n=4096, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(8, n, generator=g, dtype=torch.float64)
    oracle = torch.softmax(x, -1) * scale
    reference = torch.softmax(x.to(dtype), -1) * scale
    return reference, oracle


def test_reference_itself_passes_with_ratio_one():
    reference, oracle = outputs()
    result = compare_output(reference.clone(), reference, oracle, policy=ORACLE)
    assert result.passed and result.error_ratio <= 1.0


def test_zeros_fail_even_when_outputs_are_tiny():
    reference, oracle = outputs(scale=1e-6)
    assert not compare_output(torch.zeros_like(reference), reference, oracle, policy=ORACLE).passed
    # ... whereas KernelBench's fixed tolerance accepts them: the reason the oracle model exists.
    fixed = TolerancePolicy(mode="fixed", atol=1e-2, rtol=1e-2)
    assert compare_output(torch.zeros_like(reference), reference, oracle, policy=fixed).passed


def test_bf16_round_trip_fails_a_float32_task():
    reference, oracle = outputs()
    degraded = reference.to(torch.bfloat16).to(torch.float32)
    result = compare_output(degraded, reference, oracle, policy=ORACLE)
    assert not result.passed and result.error_ratio > 10


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_one_percent_perturbation_fails_and_rounding_noise_passes(dtype):
    reference, oracle = outputs(dtype=dtype)
    g = torch.Generator().manual_seed(1)
    rms = oracle.pow(2).mean().sqrt()
    perturbed = oracle + 0.01 * rms * torch.randn(oracle.shape, generator=g, dtype=torch.float64)
    assert not compare_output(perturbed.to(dtype), reference, oracle, policy=ORACLE).passed
    eps = torch.finfo(dtype).eps
    noise = oracle * (1 + (torch.rand(oracle.shape, generator=g, dtype=torch.float64) - 0.5) * eps)
    assert compare_output(noise.to(dtype), reference, oracle, policy=ORACLE).passed


@pytest.mark.parametrize("worst, passes", [(3.4, True), (7.0, False)])
def test_the_worst_element_may_exceed_the_references_by_the_slack_only(worst, passes):
    # An honest kernel with a different summation order: the same spread of rounding error as
    # the reference, but its unluckiest element 3.4x the reference's worst (the fused-GEMM
    # LSTM cell on inputs scaled by 1e3). 7x is beyond factor 3 times the slack of 2.
    g = torch.Generator().manual_seed(5)
    oracle = torch.ones(10_000, dtype=torch.float64)
    spread = 1e-3 * (2 * torch.rand(10_000, generator=g, dtype=torch.float64) - 1)
    reference = (oracle + spread).float()
    candidate = (oracle + spread.flip(0)).float()
    candidate[17] = 1 + worst * float(spread.abs().max())
    assert compare_output(candidate, reference, oracle, policy=ORACLE).passed is passes


def test_a_single_wrong_element_fails_elementwise():
    reference, oracle = outputs(dtype=torch.float16)
    wrong = reference.clone()
    wrong[3, 17] = 0
    result = compare_output(wrong, reference, oracle, policy=ORACLE)
    assert not result.passed


def test_shape_and_dtype_mismatch_are_explained():
    reference, oracle = outputs()
    result = compare_output(reference[:, :10], reference, oracle, policy=ORACLE)
    assert not result.passed and "wrong output shape" in result.detail
    result = compare_output(reference.double(), reference, oracle, policy=ORACLE)
    assert not result.passed and "wrong output dtype" in result.detail


def test_special_value_rules():
    reference = torch.tensor([1.0, float("inf"), float("nan"), 2.0])
    oracle = reference.double()
    spurious = torch.tensor([float("nan"), float("inf"), float("nan"), 2.0])
    result = compare_output(spurious, reference, oracle, policy=ORACLE, planted=True)
    assert not result.passed and result.notes[0].severity is Severity.FAIL
    other_kind = torch.tensor([1.0, float("nan"), float("nan"), 2.0])
    result = compare_output(other_kind, reference, oracle, policy=ORACLE, planted=True)
    assert result.passed and [n.check for n in result.notes] == ["non-finite-kind"]


@pytest.mark.parametrize("planted", [True, False])
def test_a_number_where_the_true_answer_is_nan_or_inf_is_wrong(planted):
    """Issue 25 class 4: turning the reference's NaN or Inf into a number is a silently wrong
    answer on every variant, planted or not, never a warning."""
    reference = torch.tensor([1.0, float("inf"), float("nan"), 2.0])
    oracle = reference.double()
    for masked in (
        torch.tensor([1.0, 5.0, float("nan"), 2.0]),
        torch.tensor([1.0, float("inf"), 0.0, 2.0]),
    ):
        result = compare_output(masked, reference, oracle, policy=ORACLE, planted=planted)
        assert not result.passed, masked
        assert [(n.check, n.severity) for n in result.notes] == [
            ("masks-non-finite", Severity.FAIL)
        ]
        assert "finite where the reference gives NaN or Inf" in result.detail
    # The same positions and kinds pass.
    assert compare_output(reference.clone(), reference, oracle, policy=ORACLE).passed


def test_opposite_infinities_are_wrong_nan_against_inf_is_not():
    reference = torch.tensor([1.0, float("inf"), -float("inf"), 2.0])
    flipped = torch.tensor([1.0, -float("inf"), -float("inf"), 2.0])
    result = compare_output(flipped, reference, reference.double(), policy=ORACLE)
    assert not result.passed and "opposite sign" in result.detail
    nan_for_inf = torch.tensor([1.0, float("nan"), -float("inf"), 2.0])
    assert compare_output(nan_for_inf, reference, reference.double(), policy=ORACLE).passed


def test_where_the_reference_overflowed_but_the_answer_fits_either_is_accepted():
    """The reference's own Inf is not the truth where the float64 oracle is a finite number
    of the dtype (the reference overflowed in an intermediate): a candidate that stays finite
    there is more robust, not wrong; one that overflows like the reference is as good."""
    reference = torch.tensor([1.0, float("inf"), 2.0])
    oracle = torch.tensor([1.0, 3.0e38, 2.0], dtype=torch.float64)  # fits float32
    finite = torch.tensor([1.0, 3.0e38, 2.0])
    result = compare_output(finite, reference, oracle, policy=ORACLE)
    assert result.passed and [n.severity for n in result.notes] == [Severity.INFO]
    assert compare_output(reference.clone(), reference, oracle, policy=ORACLE).passed
    # Past the largest float32 the exact answer in float32 is Inf: a number there is wrong.
    beyond = torch.tensor([1.0, 1e39, 2.0], dtype=torch.float64)
    assert not compare_output(finite, reference, beyond, policy=ORACLE).passed
    # At the edge itself (within OVERFLOW_MARGIN) either rounding is honest.
    edge = torch.tensor([1.0, 3.4028e38, 2.0], dtype=torch.float64)
    assert compare_output(
        torch.tensor([1.0, 3.4028e38, 2.0]), reference, edge, policy=ORACLE
    ).passed
    finite_reference = torch.tensor([1.0, 3.4028e38, 2.0])
    assert compare_output(reference.clone(), finite_reference, edge, policy=ORACLE).passed


def test_without_an_oracle_the_references_nan_positions_are_the_truth():
    """Stress sizes and timed outputs compare with the reference itself."""
    reference = torch.tensor([1.0, float("nan"), 2.0])
    masked = torch.tensor([1.0, 0.5, 2.0])
    own = OwnError(norm=1e-7, element=1e-7)
    assert not compare_output(masked, reference, reference, policy=ORACLE, own_error=own).passed
    assert compare_output(
        reference.clone(), reference, reference, policy=ORACLE, own_error=own
    ).passed


def test_integer_outputs_are_exact():
    reference = torch.tensor([3, 1, 4, 1, 5])
    assert compare_output(reference.clone(), reference, reference, policy=ORACLE).passed
    wrong = reference.clone()
    wrong[0] = 0
    assert not compare_output(wrong, reference, reference, policy=ORACLE).passed


@pytest.mark.parametrize("noise, shift", [(1e-7, 0.0), (3e-6, 0.0), (0.0, 1e-3), (0.0, 0.0)])
def test_a_known_own_error_is_judged_alike_in_float32_and_float64(noise, shift):
    # With the reference's error known and the reference as the target, the comparison runs
    # in float32 (half the traffic on the timed outputs it verifies): the same verdict and,
    # to float32's precision, the same ratio as in float64.
    generator = torch.Generator().manual_seed(0)
    reference = torch.randn(64, 257, generator=generator)
    candidate = reference + noise * torch.randn(64, 257, generator=generator) + shift
    own = OwnError(norm=2e-7, element=1e-6)
    policy = TolerancePolicy()
    assert _working_dtype(reference, reference, own, policy) is torch.float32
    fast = compare_output(candidate, reference, reference, policy=policy, own_error=own)
    exact = compare_output(candidate, reference, reference.double(), policy=policy, own_error=own)
    assert fast.passed == exact.passed
    assert fast.error_ratio == pytest.approx(exact.error_ratio, rel=1e-5, abs=1e-9)


def test_float32_overflow_on_huge_outputs_falls_back_to_float64():
    reference = torch.tensor([3e38, -3e38, 1.0, 2.0])
    candidate = torch.tensor([-3e38, 3e38, 1.0, 2.0])  # wrong by 6e38: inf in float32
    result = compare_output(
        candidate,
        reference,
        reference,
        policy=TolerancePolicy(),
        own_error=OwnError(norm=1e-7, element=1e-7),
    )
    assert not result.passed
    assert result.error_ratio is not None and math.isfinite(result.error_ratio)


def test_the_reference_side_is_remembered_but_never_served_stale():
    # A session compares every candidate with the same replayed reference and oracle: their
    # side of the comparison is computed once. An in-place change of either is seen.
    reference, oracle = outputs()
    candidate = reference + 1e-7
    first = compare_output(candidate, reference, oracle, policy=ORACLE)
    assert id(oracle) in _DERIVED  # remembered for the next candidate
    again = compare_output(candidate.clone(), reference, oracle, policy=ORACLE)
    assert again.reference_error == first.reference_error
    assert again.error_ratio == first.error_ratio
    reference.add_(1e-4)  # the reference's own error grows: its side must be recomputed
    changed = compare_output(candidate, reference, oracle, policy=ORACLE)
    assert changed.reference_error > first.reference_error * 10
    reference[0, 0] = float("nan")  # and its finiteness too
    masked = compare_output(candidate, reference, oracle, policy=ORACLE)
    assert any("finite" in note.message for note in masked.notes)


def test_comparing_in_reused_buffers_leaves_the_outputs_alone_and_gives_fresh_results():
    # The working copies live in per-thread buffers reused across comparisons of any size:
    # a float64 candidate (no conversion) must not be changed in place, and a comparison
    # after a larger one must judge only its own elements.
    torch.manual_seed(3)
    big = torch.randn(4096, dtype=torch.float64)
    small_oracle = torch.randn(100, dtype=torch.float64)
    small_candidate = small_oracle + 1e-3
    kept = small_candidate.clone()
    policy = TolerancePolicy()
    compare_output(big + 1.0, big, big, policy=policy)
    first = compare_output(small_candidate, small_oracle, small_oracle.clone(), policy=policy)
    assert torch.equal(small_candidate, kept)
    again = compare_output(small_candidate, small_oracle, small_oracle.clone(), policy=policy)
    assert first.error_ratio == again.error_ratio and not first.passed
    assert first.candidate_error == pytest.approx(
        1e-3 / float(small_oracle.pow(2).mean().sqrt()), rel=1e-6
    )


def test_reductions_in_float32_fall_back_to_float64_where_float32_overflows():
    from kernelproof.checks.tolerance import _all_finite, _rms

    huge = torch.full((1000,), 1e20, dtype=torch.float32)  # squares overflow float32
    assert _rms(huge) == pytest.approx(1e20, rel=1e-6)
    assert _rms(torch.full((10,), 3.0)) == pytest.approx(3.0)
    assert _all_finite(torch.ones(5)) and not _all_finite(torch.tensor([1.0, float("nan")]))
    assert not _all_finite(torch.tensor([float("inf"), -float("inf")]))
    # A finite tensor whose float32 sum overflows reads as "not known finite": the caller then
    # checks element by element, which finds every element finite.
    assert not _all_finite(torch.full((4,), 3e38))
    verdict = compare_output(
        torch.full((4,), 3e38),
        torch.full((4,), 3e38),
        torch.full((4,), 3e38, dtype=torch.float64),
        policy=ORACLE,
    )
    assert verdict.passed
