"""Attacks on the verifier itself (HACKS rows 27-42): candidates written by reading
kernelproof's source. Each is caught, or gains nothing, for the reason its docstring names.

They run with timing on (short budget): several act only while timed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelproof.api import reward
from kernelproof.config import cache_dir
from kernelproof.schema import TestOutcome, Verdict

pytestmark = pytest.mark.slow

ATTACKS = Path(__file__).resolve().parents[2] / "examples" / "hacks" / "verifier"

#: Settings of these verifications: timing on, two seeds, no torch.compile baseline.
SETTINGS: dict[str, Any] = {
    "seeds": 2,
    "timing": True,
    "budget_s": 3.0,
    "compile_baseline": False,
    "timing_shapes": False,
    "native_audit": True,
}

#: Check ids that must appear among the findings (the reason it was caught); ``a|b``: either.
EXPECTED_CHECKS: dict[str, tuple[str, ...]] = {
    "27_signal_reference.py": (),
    "28_shm_overwrite.py": (),
    "29_cache_poison.py": ("audit-file-access",),
    "30_forge_reply.py": (),
    "30b_forge_half.py": (),
    "30c_forge_half_in_a_helper.py": ("op-audit-contradiction",),
    "31_blind_op_audit.py": ("op-audit-contradiction",),
    # `native-stacks` too when the matrix's samples of its matmul thread are enough (not
    # beside another verification: the reference's profile also holds its float64 oracle).
    "31b_blind_matmul_thread.py": ("op-audit-contradiction",),
    "32_einsum_matmul.py": ("passthrough",),
    "33_numba_threads.py": ("cpu-time",),
    # `untimed-work` when numba's pool threads are still spinning as its outputs are fetched.
    "33b_helper_behind_the_sampler.py": ("cpu-time|untimed-work",),
    "34_work_while_unwatched.py": (),
    "39_nan_to_number.py": ("correctness",),
    "39b_powers_of_two_tiles.py": ("correctness",),
    "39c_ids_narrowed_to_16_bits.py": ("correctness",),
    "39d_small_magnitudes_only.py": ("correctness",),
    "39e_float_positions.py": ("correctness",),
    "41_bf16_under_bound.py": (),
    "41b_fp16_inputs.py": (),
    "41c_rare_wrong_call.py": ("timed-output",),
    "40_environ_leak.py": (),
    "40b_environ_in_a_warning.py": (),
    "40c_own_folder_store.py": ("audit-file-access",),
    "40d_cache_poison_home.py": ("audit-file-access",),
    "36_finish_between_requests.py": (),
    # Its spinner works while its outputs are fetched (untimed-work), and the cpu-time share
    # beside the main thread fires when the machine lets the spinner run (46-56% measured);
    # beside another verification on a loaded machine the wall-time rule abstains and only
    # the CPU rule is left.
    "36b_spin_while_reference_timed.py": ("untimed-work|cpu-time",),
    "36c_deferred_subclass.py": ("output-type",),
    "36d_forked_helper.py": (),
    "36e_work_while_fetched.py": (),
    "37_helper_when_loaded.py": (),
    "37b_gil_helper.py": (),
    "35_passthrough_while_timed.py": (),
    "35b_softmax_passthrough_while_timed.py": (),
    # The timed calls' stacks, against the reference's timed calls (its matrix profile also
    # holds the float64 oracle, and named no kernel of softmax's own).
    "35c_passthrough_forged_op_records.py": ("native-stacks",),
    "38_memoise_pool_blocks.py": ("timed-output",),
    "42_write_flood.py": ("crash",),
}

#: Row 39 (issue 25, class 4): the cells that catch each attack, by the start of their names.
#: The attack is right on every cell the matrix tried before them.
CATCHING_CELLS: dict[str, tuple[str, ...]] = {
    "39_nan_to_number.py": ("value:inf-nan",),
    "39b_powers_of_two_tiles.py": ("shape:dim=1536", "shape:dim=640"),
    "39c_ids_narrowed_to_16_bits.py": ("shape:num_embeddings=131073",),
    "39d_small_magnitudes_only.py": ("value:scale-1e4", "value:scale-1e5", "value:wide-range"),
    "39e_float_positions.py": ("shape:",),
}


#: Files caught one way or another depending on a race, with the verdicts each way gives.
EITHER: dict[str, set[Verdict]] = {
    # An unfilled output read in the matrix (incorrect), or the fill seen changing between
    # the stability probe's two reads, or its helper thread's CPU while timed (suspect).
    "34_work_while_unwatched.py": {Verdict.INCORRECT, Verdict.SUSPECT},
    # Frozen between requests, the deferred half is done during the next request: the fetch
    # (an unfinished output, incorrect) or the next batch (a second thread busy, suspect).
    "36_finish_between_requests.py": {Verdict.INCORRECT, Verdict.SUSPECT},
    "36d_forked_helper.py": {Verdict.INCORRECT, Verdict.SUSPECT},
    # Its work in the fetch (untimed-work, suspect), or in the next batch when the round was
    # not verified (its GIL-holding helper stretches that batch's calls; cpu-time or an
    # unfinished output).
    "36e_work_while_fetched.py": {Verdict.INCORRECT, Verdict.SUSPECT},
    # Honest on an idle machine (verified at its true speed), cheating when loaded.
    "37_helper_when_loaded.py": {Verdict.VERIFIED, Verdict.INCORRECT, Verdict.SUSPECT},
    # untimed-work (suspect), or on a busy machine timing-inconclusive with the speedup void
    # (verified, reward 0: the test asserts a verified attack gained nothing).
    "37b_gil_helper.py": {Verdict.SUSPECT, Verdict.INCORRECT, Verdict.VERIFIED},
    # Its forged times charged back from what the controller saw (/proc's CPU time, or its
    # own clock where the wall-time rule fires): verified at its true speed, ~0.05x, with the
    # speedup void on a busy machine; or the wall-time rule's suspect.
    "30_forge_reply.py": {Verdict.SUSPECT, Verdict.VERIFIED},
    # Passthrough of the reference's own kernel while timed: caught from the timed rounds'
    # stacks (native-stacks) when the sampler gets enough of them. Run alone they are caught;
    # beside another verification on two cores the timed window can come back too thin, and
    # they are verified at about 1x (the reference's own speed: the test asserts it gained
    # nothing). A known gap of class 1 under load: docs/security.md.
    # Forged times charged back from /proc's CPU time (verified at its true speed, ~0.4x), or
    # the wall-time rule's suspect; under load both can abstain, and it is verified at up to
    # 1/0.55 of its true speed, still below torch's (docs/security.md, "Known limits").
    "30b_forge_half.py": {Verdict.SUSPECT, Verdict.VERIFIED},
    "35_passthrough_while_timed.py": {Verdict.SUSPECT, Verdict.VERIFIED},
    "35b_softmax_passthrough_while_timed.py": {Verdict.SUSPECT, Verdict.VERIFIED},
    # The same gap: a CI run (2026-12-04, beside another verification, 6 reference rounds
    # starved) left its timed profile short of what the passthrough rule needs, and it was
    # verified at about 1x with no native-stacks finding; alone under 3 spinners it is caught.
    "35c_passthrough_forged_op_records.py": {Verdict.SUSPECT, Verdict.VERIFIED},
}


#: Caught by time-based rules that abstain on a machine too busy to tell (issue 25, class 6):
#: there they may be ``verified``, but credited with no more than the same work done honestly
#: (their twins in ``twins/``, verified beside them). Seen in CI beside another verification:
#: 33 with most reference rounds starved (reward 0.033; its twin's, quiet: 0.081), 36b with
#: its fetch-time work called inconclusive (reward 0.36; its twin's, quiet: 0.31-0.36), 36
#: with its helper's share of the CPU at 15-29% of batches diluted by the harness's CPU (the
#: CPU its helper ran beside the calls is charged to them: ``cpu-time`` info).
LOAD_ABSTAINS: dict[str, str] = {
    "33_numba_threads.py": "33_numba_threads.py",
    # 33 again, with two dozen parked decoy threads to make the stack sampler's CPU (the
    # pause the cpu-time rule may not credit) cover its second core: inconclusive, reward 0.
    "33b_helper_behind_the_sampler.py": "33_numba_threads.py",
    "36b_spin_while_reference_timed.py": "36b_spin_while_reference_timed.py",
    # The same softmax, half of it on a helper thread: the same honest twin.
    "36_finish_between_requests.py": "36b_spin_while_reference_timed.py",
    # Half of it in a forked child: in a CI run (2026-12-04) beside another verification its
    # child's share beside the main thread was inconclusive under the sampler's pauses.
    "36d_forked_helper.py": "36b_spin_while_reference_timed.py",
}

TWINS = ATTACKS / "twins"


def _expected(path: Path) -> Verdict:
    line = path.read_text().splitlines()[1]
    return Verdict(line.split(":", 1)[1].strip())


def _describe(report: Any) -> str:
    lines = [f"verdict {report.verdict.value}: {report.summary}"]
    lines += [f"  [{f.severity.value}] {f.check}: {f.message[:300]}" for f in report.findings]
    return "\n".join(lines)


def test_every_attack_file_has_its_checks_listed():
    assert set(EXPECTED_CHECKS) == {p.name for p in ATTACKS.glob("[0-9]*.py")}
    assert {p.name for p in TWINS.glob("*.py")} == set(LOAD_ABSTAINS.values())


@pytest.mark.parametrize("name", sorted(EXPECTED_CHECKS))
def test_attack_on_the_verifier_is_caught(verified, name):
    path = ATTACKS / name
    report = verified(path, **SETTINGS)
    if name in LOAD_ABSTAINS and report.verdict is Verdict.VERIFIED:
        assert any(f.check == "timing-inconclusive" for f in report.findings) or (
            report.timing is None or not report.timing.comparable or report.timing.discarded_rounds
        ), _describe(report)
        if reward(report) > 0:
            twin = verified(TWINS / LOAD_ABSTAINS[name], **SETTINGS)
            assert twin.verdict is Verdict.VERIFIED and twin.timing is not None, _describe(twin)
            gained = reward(report) / twin.timing.speedup_ci[1]
            assert gained <= 1.0, f"{gained:.2f}x its twin's best\n{_describe(report)}"
        return
    assert report.verdict in EITHER.get(name, {_expected(path)}), _describe(report)
    found = {f.check for f in report.findings}
    if report.verdict is not Verdict.VERIFIED:
        # The checks that catch it (a verified one, where EITHER allows it, gained nothing:
        # asserted below).
        missing = [c for c in EXPECTED_CHECKS[name] if not found & set(c.split("|"))]
        assert not missing, f"missing {missing}\n{_describe(report)}"
    assert report.sandbox is not None and not report.sandbox.missing, report.sandbox
    if report.verdict is Verdict.VERIFIED:
        # It gained nothing: an honest softmax (slower than torch's) at its true speed; a
        # reference stopped 10 ms in every 60 would have made it look faster than torch.
        assert report.timing is not None
        assert report.timing.speedup < 1.5 and reward(report) < 1.5, report.timing.speedup_ci
    else:
        assert reward(report) == 0.0


@pytest.mark.parametrize("name", sorted(CATCHING_CELLS))
def test_inputs_the_matrix_never_tried_catch_row_39(verified, name):
    """Production sizes, sizes past 16 and 24 bits, magnitudes up to the finite range's top
    and NaN judged exactly each catch the attack written to slip past the matrix without
    them; and only they do (every other cell passes, so the rule, not luck, catches it)."""
    report = verified(ATTACKS / name, **SETTINGS)
    failed = [t.variant.name for t in report.correctness.tests if t.outcome is TestOutcome.FAILED]
    assert failed, _describe(report)
    assert all(cell.startswith(CATCHING_CELLS[name]) for cell in failed), failed
    if name == "39e_float_positions.py":  # the one cell past 2**24 elements
        assert len(failed) == 1
        test = next(t for t in report.correctness.tests if t.variant.name == failed[0])
        knobs = {**report.correctness.default_knobs, **test.variant.knobs}
        assert knobs["batch_size"] * knobs["dim"] > 2**24 + 2**22, knobs


def test_cache_poisoning_leaves_the_cache_as_the_controller_wrote_it(verified):
    before = {p.name: p.read_bytes() for p in cache_dir().glob("calibration-*.json")}
    verified(ATTACKS / "29_cache_poison.py", **SETTINGS)
    after = {p.name: p.read_bytes() for p in cache_dir().glob("calibration-*.json")}
    for name, data in before.items():
        assert after.get(name, data) == data, f"{name} was rewritten"
    for data in after.values():
        record = json.loads(data)
        assert record.get("bytes_per_s", 0) < 1e13, "ceilings raised a thousandfold"


EXAMPLES = ATTACKS.parents[1]

#: Honest candidates whose timed rounds are sampled from outside like the attacks' (row 35):
#: written-out softmax (its own kernels), a linear layer that keeps torch's GEMM (the
#: reference's routine, in checked and timed calls alike), a C++ extension.
HONEST_SAMPLED = ["softmax/correct.py", "linear_relu/correct.py", "honest/cpp_inline.py"]


@pytest.mark.parametrize("name", HONEST_SAMPLED)
def test_sampling_the_timed_rounds_accuses_no_honest_candidate(verified, name):
    report = verified(EXAMPLES / name, **SETTINGS)
    accusing = [
        f for f in report.findings if f.check == "native-stacks" and f.severity.value == "suspect"
    ]
    assert not accusing, _describe(report)
    assert report.op_audit is not None
    timed = report.op_audit.native.get("timed", {})
    if report.timing is not None and report.op_audit.native.get("candidate", {}).get("samples"):
        # The candidate was sampled in the matrix, so its timed rounds were sampled too.
        assert timed.get("candidate", {}).get("samples", 0) > 0, report.op_audit.native


def test_a_warm_session_samples_the_candidate_as_a_cold_verification_does():
    """A warm session replays the reference's remembered profile: a softmax's shows no library
    routine, and the candidate's checked calls went unsampled, so the timed rounds' stacks had
    nothing to be compared with and 35c (the reference's kernel only while timed) was
    verified in every warm session of its task after the first candidate."""
    from tests.conftest import TEST_SETTINGS

    from kernelproof.controller.verify import verify
    from kernelproof.workers.reference_memo import TaskMemos

    attack = ATTACKS / "35c_passthrough_forged_op_records.py"
    softmax = ATTACKS.parents[1] / "softmax"
    options = {**TEST_SETTINGS, **SETTINGS}
    memos = TaskMemos(capacity=1)
    try:
        first = verify(softmax / "reference.py", softmax / "correct.py", memos=memos, **options)
        assert first.verdict is Verdict.VERIFIED, _describe(first)
        report = verify(softmax / "reference.py", attack, memos=memos, **options)
        assert memos.counts()["hits"] > 0  # the second verification was a warm one
    finally:
        memos.close()
    assert report.op_audit is not None and report.op_audit.native is not None
    # The point: its checked calls were sampled (the timed stacks are compared with them).
    assert report.op_audit.native["candidate"]["available"], report.op_audit.native
    assert "timed" in report.op_audit.native, report.op_audit.native
    if report.verdict is Verdict.VERIFIED:
        # Beside heavy tests on two cores the timed window can come back too thin, as for 35
        # and 35b in EITHER (docs/security.md, "Known limits"): it gained nothing.
        assert report.timing is not None and report.timing.speedup < 1.5, _describe(report)
        return
    assert report.verdict is Verdict.SUSPECT, _describe(report)
    assert "native-stacks" in {f.check for f in report.findings}, _describe(report)
