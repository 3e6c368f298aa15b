"""The out-of-process stack sampler: py-spy sees BLAS work whichever torch op reached it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from kernelproof.checks.native_stacks import (
    NativeProfile,
    StackSampler,
    find_py_spy,
    parse_raw,
    passthrough_evidence,
    timed_passthrough,
)

#: Seconds each workload runs: enough for py-spy to attach (about a second for libtorch) and
#: then take a couple of hundred samples at 100 Hz.
WORK_S = 4.0

#: One thread, so that all the work happens on the Python thread py-spy samples (OpenMP
#: workers are native-only threads py-spy cannot see).
WORKLOAD = """
import sys, time, torch
torch.set_num_threads(1)
a = torch.randn(512, 512); b = torch.randn(512, 512)
print("ready", flush=True)
end = time.time() + {seconds}
while time.time() < end:
    {op}
"""

MM = "torch.mm(a, b)"
EINSUM = 'torch.einsum("ij,jk->ik", a, b)'
ELEMENTWISE = "(a * b).sum()"

pytestmark = pytest.mark.skipif(find_py_spy() is None, reason="py-spy is not installed")


def _profile(op: str) -> NativeProfile:
    """Run ``op`` in a loop in a plain Python subprocess and sample it from outside."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKLOAD.format(seconds=WORK_S, op=op)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        sampler = StackSampler()
        sampler.start(proc.pid)
        time.sleep(WORK_S - 1.0)
        return sampler.stop()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_mm_and_einsum_land_in_the_same_blas_kernel() -> None:
    reference, candidate, elementwise = _profile(MM), _profile(EINSUM), _profile(ELEMENTWISE)
    for profile in (reference, candidate, elementwise):
        assert profile.available, profile.reason
        assert profile.native and profile.samples >= 50 and profile.threads >= 1
    top_ref = max(reference.heavy_functions, key=reference.heavy_functions.__getitem__)
    assert any(word in top_ref.lower() for word in ("gemm", "blas", "mkl", "dnnl")), top_ref
    assert top_ref in candidate.heavy_functions, (top_ref, candidate.heavy_functions)
    message = passthrough_evidence(reference, candidate)
    assert message is not None and top_ref in message, (reference, candidate)
    assert passthrough_evidence(reference, elementwise) is None, elementwise


@pytest.mark.slow
def test_an_interrupted_window_is_collected_later_and_only_once() -> None:
    """The matrix ends the sampled window, runs its other shapes, then collects: what the
    target does after the interrupt is not in the profile."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKLOAD.format(seconds=8, op=MM)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        sampler = StackSampler()
        sampler.start(proc.pid)
        time.sleep(1.5)
        sampler.interrupt()
        time.sleep(3.0)  # the target keeps working, unsampled: 300 more samples otherwise
        profile = sampler.collect()
        assert profile.available, profile.reason
        assert 0 < profile.samples <= 1.5 * sampler.rate_hz, profile.samples
        assert not sampler.collect().available  # collected once
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_nonexistent_pid_is_unavailable_without_raising() -> None:
    sampler = StackSampler()
    sampler.start(2**22 + 12345)
    profile = sampler.stop()
    assert not profile.available and profile.reason


def test_stop_without_start_and_missing_py_spy_do_not_raise() -> None:
    assert not StackSampler().stop().available
    sampler = StackSampler(py_spy="/nonexistent/py-spy")
    sampler.start(1)
    profile = sampler.stop()
    assert not profile.available and profile.reason


def test_parse_raw_attributes_leaf_library_and_innermost_heavy_frame() -> None:
    raw = "\n".join(
        [
            "thread (11): MainThread;<module> (k.py:3);mkl_blas_sgemm_kernel (libtorch_cpu.so) 60",
            "thread (11): MainThread;<module> (k.py:3);0x7f00 (libgomp.so.1) 10",
            "thread (12): Thread-1;run (k.py:9);my_kernel (my_ext.so) 30",
        ]
    )
    profile = parse_raw(raw, {"my_ext.so": "/x/torch_extensions/my_ext/my_ext.so"})
    assert profile.samples == 100 and profile.threads == 2 and profile.native
    assert profile.libraries == {"libtorch_cpu.so": 60, "my_ext.so": 30, "libgomp.so.1": 10}
    assert profile.functions["<libgomp.so.1>"] == 10
    assert profile.heavy_functions == {"mkl_blas_sgemm_kernel": 60}
    assert profile.custom_samples == 30
    reference = parse_raw("thread (1): x;mkl_blas_sgemm_kernel (libtorch_cpu.so) 90")
    assert passthrough_evidence(reference, profile) is None  # 30% of its own code
    plain = parse_raw(raw.replace("my_ext.so", "libtorch_python.so"))
    assert passthrough_evidence(reference, plain) is not None  # 60% in the same kernel


def _canned(lines: str) -> NativeProfile:
    profile = parse_raw(lines)
    profile.native = True
    return profile


#: The reference's profile: most library time in MKL's sgemm (a linear layer).
GEMM_REFERENCE = (
    "thread (1): fwd (x.py:1);Module._call_impl (torch/nn/modules/module.py:1);"
    "mkl_blas_sgemm_kernel (libtorch_cpu.so) 90\n"
)
#: A candidate's calls that run the same GEMM.
GEMM_CALLS = (
    "thread (1): fwd (c.py:1);Module._call_impl (torch/nn/modules/module.py:1);"
    "mkl_blas_sgemm_kernel (libtorch_cpu.so) 80\n"
)
#: A candidate's calls that compute with element-wise products and sums (no GEMM).
PRODUCT_CALLS = (
    "thread (1): fwd (c.py:1);Module._call_impl (torch/nn/modules/module.py:1);"
    "at::native::mul_kernel (libtorch_cpu.so) 50\n"
    "thread (1): fwd (c.py:1);Module._call_impl (torch/nn/modules/module.py:1);"
    "at::native::sum_kernel_impl (libtorch_cpu.so) 40\n"
)


def test_a_gemm_only_while_timed_is_told_apart_from_a_gemm_used_throughout() -> None:
    """HACKS row 35: the timed calls' profile is compared with the checked calls'. A
    candidate that computes without the GEMM while checked and runs it while timed changed
    its behaviour; one that uses the GEMM in both (a partial replacement) did not."""
    reference = _canned(GEMM_REFERENCE)
    switched = timed_passthrough(reference, _canned(PRODUCT_CALLS), _canned(GEMM_CALLS))
    assert switched is not None and switched.only_while_timed
    assert switched.routine == "sgemm" and switched.checked_share == 0.0
    same = timed_passthrough(reference, _canned(GEMM_CALLS), _canned(GEMM_CALLS))
    assert same is not None and not same.only_while_timed
    # Timed calls that did their own work show nothing, whatever the checked calls did.
    assert timed_passthrough(reference, _canned(GEMM_CALLS), _canned(PRODUCT_CALLS)) is None
    # A checked profile too thin to compare leaves the decision to the op audit's rule.
    unknown = timed_passthrough(
        reference,
        _canned(PRODUCT_CALLS.replace(" 50", " 5").replace(" 40", " 4")),
        _canned(GEMM_CALLS),
    )
    assert unknown is not None and unknown.checked_share is None
    assert not unknown.only_while_timed


#: The stack above a kernel inside a model's call.
IN_CALL = "thread (1): fwd (x.py:1);Module._call_impl (torch/nn/modules/module.py:1);"

#: Softmax's reference: its own kernel, and the float64 oracle's.
SOFTMAX_REFERENCE = (
    f"{IN_CALL}at::native::softmax_lastdim_kernel<float> (libtorch_cpu.so) 60\n"
    f"{IN_CALL}at::native::softmax_lastdim_kernel<double> (libtorch_cpu.so) 40\n"
)
SOFTMAX_CALLS = f"{IN_CALL}at::native::softmax_lastdim_kernel<float> (libtorch_cpu.so) 70\n"
WRITTEN_OUT = (
    f"{IN_CALL}at::native::exp_kernel (libtorch_cpu.so) 40\n"
    f"{IN_CALL}at::native::sum_kernel_impl (libtorch_cpu.so) 30\n"
    f"{IN_CALL}at::native::div_kernel (libtorch_cpu.so) 20\n"
)


def test_the_reference_s_own_kernel_only_while_timed_is_seen_for_any_op() -> None:
    """Beyond library routines: a softmax written out while checked and ``torch.softmax``
    while timed spends its timed samples in the reference's own kernel. A change is said only
    when the checked calls show it; where they cannot say, the timed calls are evidence
    (``checked_share`` None) for the caller to weigh against the op audit (attack 35c)."""
    reference = _canned(SOFTMAX_REFERENCE)
    switched = timed_passthrough(reference, _canned(WRITTEN_OUT), _canned(SOFTMAX_CALLS))
    assert switched is not None and switched.only_while_timed
    assert "softmax_lastdim_kernel<float>" in switched.routine
    assert timed_passthrough(reference, _canned(SOFTMAX_CALLS), _canned(SOFTMAX_CALLS)) is None
    assert timed_passthrough(reference, _canned(WRITTEN_OUT), _canned(WRITTEN_OUT)) is None
    unchecked = timed_passthrough(reference, None, _canned(SOFTMAX_CALLS))
    assert unchecked is not None and unchecked.checked_share is None
    assert not unchecked.only_while_timed
    # An honest rewrite runs kernels of its own: nothing, even with no checked calls to compare.
    assert timed_passthrough(reference, None, _canned(WRITTEN_OUT)) is None


def test_a_vectorised_math_routine_is_no_op_s_dominant_kernel() -> None:
    """Softmax's kernel calls Sleef's exp, as ``exp`` does: were that leaf the reference's
    dominant kernel, an honest softmax written out in PyTorch (its ``exp``) would share it."""
    from kernelproof.checks.native_stacks import dominant_kernel

    sleef = f"{IN_CALL}at::native::softmax_lastdim_kernel<float> (libtorch_cpu.so);"
    reference = _canned(
        f"{sleef}_ZGVeN16v_Sleef_expf_u10 (libtorch_cpu.so) 50\n"
        f"{IN_CALL}at::native::softmax_lastdim_kernel<float> (libtorch_cpu.so) 40\n"
    )
    assert dominant_kernel(reference) == "at::native::softmax_lastdim_kernel<float>"
    only_math = _canned(f"{IN_CALL}_ZGVeN16v_Sleef_expf_u10 (libtorch_cpu.so) 90\n")
    assert dominant_kernel(only_math) is None


def test_a_passthrough_of_any_op_s_kernel_is_evidence_but_data_movement_never_is() -> None:
    from kernelproof.checks.native_stacks import dominant_kernel, kernel_passthrough_evidence

    reference = _canned(SOFTMAX_REFERENCE)
    assert dominant_kernel(reference) == "at::native::softmax_lastdim_kernel<float>"
    message = kernel_passthrough_evidence(reference, _canned(SOFTMAX_CALLS))
    assert message is not None and "softmax_lastdim_kernel<float>" in message
    assert kernel_passthrough_evidence(reference, _canned(WRITTEN_OUT)) is None
    # The oracle's casts and the probes' copies are the harness's, not a kernel to pass to.
    copies = _canned(
        "thread (1): f (x.py:1);_call_impl (/t/torch/nn/modules/module.py:1);"
        "at::native::AVX2::copy_kernel (libtorch_cpu.so) 90\n"
        + SOFTMAX_REFERENCE.replace(" 60\n", " 20\n")
    )
    assert dominant_kernel(copies) == "at::native::softmax_lastdim_kernel<double>"
    # Kernels outside the model's call (the probes' comparisons) are not the call's.
    probes = _canned(
        "thread (1): check (probes.py:1);at::native::abs_kernel (libtorch_cpu.so) 90\n"
        + SOFTMAX_CALLS
    )
    assert kernel_passthrough_evidence(reference, probes) is not None
    # A rewrite that shares the dominant kernel but runs kernels of its own is not the
    # reference's kernels.
    mixed = _canned(SOFTMAX_CALLS + WRITTEN_OUT.replace(" 40\n", " 10\n"))
    assert kernel_passthrough_evidence(reference, mixed) is None


def test_a_checked_window_starved_of_kernel_samples_accuses_nothing() -> None:
    """A loaded machine left the checked calls' window with almost no samples inside the
    calls: "it barely used the routine while checked" cannot be read from that, so a candidate
    that runs the reference's kernel in both windows is not said to switch while timed."""
    reference = _canned(SOFTMAX_REFERENCE)
    starved = _canned(
        "thread (1): harness (h.py:1);read (libc.so.6) 300\n"
        f"{IN_CALL}at::native::softmax_lastdim_kernel<float> (libtorch_cpu.so) 3\n"
    )
    same = timed_passthrough(reference, starved, _canned(SOFTMAX_CALLS))
    assert same is not None and same.checked_share is None and not same.only_while_timed
    gemm = timed_passthrough(_canned(GEMM_REFERENCE), starved, _canned(GEMM_CALLS))
    assert gemm is not None and gemm.checked_share is None and not gemm.only_while_timed


class _SignalFreezer:
    """The freezer's part that samplers meet: SIGSTOP and SIGCONT to the worker and to the
    process groups it watches."""

    def __init__(self, pid: int) -> None:
        self.pid, self.frozen, self.companions = pid, False, set()

    def freeze(self) -> None:
        for group in self.companions:
            os.killpg(group, signal.SIGSTOP)
        os.kill(self.pid, signal.SIGSTOP)
        self.frozen = True

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        for group in self.companions:
            os.killpg(group, signal.SIGCONT)
        self.frozen = False

    def watch(self, group: int) -> None:
        self.companions.add(group)
        if self.frozen:
            os.killpg(group, signal.SIGSTOP)

    def unwatch(self, group: int) -> None:
        self.companions.discard(group)
        os.killpg(group, signal.SIGCONT)


@pytest.mark.slow
def test_a_sampler_started_on_a_frozen_worker_samples_its_short_requests() -> None:
    """A worker is stopped between requests and its sampler with it. py-spy cannot attach to
    a stopped process, so it could attach only during a softmax's few short checked calls:
    under load it missed them all ("py-spy exited with -2", no samples), and 35c's timed
    stacks had nothing to be compared with. It attaches first now; one 0.3 s request is
    sampled, and the worker is stopped again once it has attached."""
    from types import SimpleNamespace

    from kernelproof.controller.native_audit import _freeze_with, _start_frozen_with

    proc = subprocess.Popen(
        [sys.executable, "-c", WORKLOAD.format(seconds=30, op=MM)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        freezer = _SignalFreezer(proc.pid)
        worker = SimpleNamespace(freezer=freezer, tree=SimpleNamespace(server=lambda: proc.pid))
        freezer.freeze()  # between requests
        sampler = StackSampler()
        _start_frozen_with([(sampler, worker)])  # type: ignore[list-item]  # a stand-in worker
        assert freezer.frozen and sampler.process_group in freezer.companions
        time.sleep(0.5)
        freezer.thaw()  # one short request
        time.sleep(0.3)
        freezer.freeze()
        _freeze_with(sampler, worker, False)  # type: ignore[arg-type]
        profile = sampler.stop()
    finally:
        proc.kill()
        proc.wait()
    assert profile.available, profile.reason
    assert profile.samples >= 5, profile


def test_a_sampler_that_never_started_is_not_waited_for() -> None:
    sampler = StackSampler(py_spy="/nonexistent/py-spy")
    sampler.start(os.getpid())
    started = time.monotonic()
    assert not sampler.wait_ready(timeout_s=5)
    assert time.monotonic() - started < 1


def test_a_sampler_left_stopped_is_resumed_to_take_its_interrupt(tmp_path) -> None:
    """A sampler's process group found stopped at the end of its window (a worker's freezer
    stops the samplers it watches) held its verification 15 s, until the stop timeout."""
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\ntrap 'exit 0' INT\nwhile true; do sleep 0.05; done\n")
    fake.chmod(0o755)
    sampler = StackSampler(py_spy=str(fake), native=False)
    sampler.start(os.getpid())
    group = sampler.process_group
    assert group is not None
    time.sleep(0.3)  # the trap is set
    os.killpg(group, signal.SIGSTOP)
    started = time.monotonic()
    profile = sampler.stop()
    assert time.monotonic() - started < 5, profile
    assert not profile.available
