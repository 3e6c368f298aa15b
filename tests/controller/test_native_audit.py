"""When stacks sampled from outside make a library passthrough ``suspect``: only where the op
audit inside the candidate missed the op that runs that library kernel."""

from __future__ import annotations

from kernelproof.checks.native_stacks import NativeProfile
from kernelproof.controller.native_audit import NativeAudit, TimedStacks
from kernelproof.schema import Severity

PASSTHROUGH = "of the candidate's 935 on-CPU samples, 100% ... went to dnnl"


def _audit() -> NativeAudit:
    audit = NativeAudit(None, None)
    audit.passthrough = PASSTHROUGH
    return audit


def test_a_passthrough_the_op_audit_also_saw_is_left_to_its_rule():
    # The identical GELU of an A/A run: oneDNN's eltwise kernel on both sides, and the op
    # audit saw the candidate run aten::gelu, the reference's heavy op.
    findings = _audit().findings({"aten::gelu": 1}, {"aten::gelu": 1})
    assert [f.severity for f in findings] == [Severity.INFO]


def test_a_passthrough_the_op_audit_did_not_see_is_suspect():
    # The audit was blinded (HACKS row 31): it saw only light ops, or none.
    findings = _audit().findings({"aten::empty": 1}, {"aten::gelu": 1})
    assert [f.severity for f in findings] == [Severity.SUSPECT]
    assert "saw no op that runs this kernel" in findings[0].message


def test_a_gemm_under_another_name_counts_as_seen():
    findings = _audit().findings({"aten::einsum": 1}, {"aten::mm": 1})
    assert [f.severity for f in findings] == [Severity.INFO]


def test_no_passthrough_no_finding():
    assert NativeAudit(None, None).findings({}, {"aten::gelu": 1}) == []


class _LiveWorker:
    """A worker as NativeAudit sees it: alive, with a process tree to sample."""

    alive = True
    tree = object()
    freezer = None


def _reference(heavy: dict[str, int]) -> NativeProfile:
    return NativeProfile(available=True, native=True, samples=120, heavy_functions=heavy)


def test_a_candidate_is_sampled_even_when_the_reference_uses_no_library_routine():
    # A softmax reference (a warm session's remembered profile): its heavy frames are ATen's
    # own kernels, no GEMM a candidate could hide behind in its checked calls. The candidate
    # is sampled all the same: its checked calls' profile is what the timed rounds' stacks
    # are compared with, and without it attack 35c (the reference's own kernel, only while
    # timed) went through every warm session of its task.
    reference = _reference({"at::native::softmax_lastdim_kernel": 90})
    audit = NativeAudit(_LiveWorker(), _LiveWorker(), reference_stacks=reference)
    assert list(audit.samplers) == ["candidate"]
    assert audit.unsampled == ""
    assert TimedStacks.after(audit, _LiveWorker(), _LiveWorker()) is not None


def test_a_candidate_is_sampled_when_the_reference_spends_its_time_in_a_gemm():
    reference = _reference({"mkl_blas_avx2_sgemm_kernel_0": 80, "at::native::add_kernel": 10})
    audit = NativeAudit(_LiveWorker(), _LiveWorker(), reference_stacks=reference)
    assert list(audit.samplers) == ["candidate"]


def test_an_unavailable_reference_profile_is_named_as_the_reason():
    reference = NativeProfile(available=False, reason="py-spy is not installed")
    audit = NativeAudit(_LiveWorker(), _LiveWorker(), reference_stacks=reference)
    assert audit.samplers == {}
    assert "py-spy is not installed" in audit.finish()["candidate"]["reason"]


class _SchedTree:
    """A worker's process tree whose main thread ran for ``running`` and waited ``waiting``
    seconds more each time it is read."""

    def __init__(self, running: float, waiting: float) -> None:
        self.step, self.reads = (running, waiting), 0

    def server(self) -> int:
        return 0

    def main_schedstat_s(self) -> tuple[float, float]:
        self.reads += 1
        return self.step[0] * self.reads, self.step[1] * self.reads


class _Sampler:
    process_group = None

    def start(self, pid: int) -> None: ...
    def wait_ready(self) -> bool:
        return True

    def interrupt(self) -> None: ...


def _sampled_reference(running: float, waiting: float, samples: int) -> NativeAudit:
    worker = _LiveWorker()
    worker.tree = _SchedTree(running, waiting)
    audit = NativeAudit(None, None)
    audit.samplers = {"reference": (_Sampler(), worker)}
    audit.start()
    audit.interrupt()
    audit.reference_stacks = NativeProfile(available=True, native=True, samples=samples)
    return audit


def test_a_reference_profile_thin_because_the_reference_was_starved_is_not_kept():
    """The session's first candidate kept the reference from running: its profile is too
    thin for the passthrough rule, and a later window would not be starved."""
    assert not _sampled_reference(running=0.2, waiting=0.5, samples=8).reference_profile_reusable()


def test_a_thin_profile_of_a_reference_that_ran_freely_is_kept():
    """A tiny task: a new window would sample as little, at 0.65 s a verification."""
    assert _sampled_reference(running=0.2, waiting=0.01, samples=8).reference_profile_reusable()


def test_a_profile_the_rule_can_use_is_kept_however_it_was_taken():
    assert _sampled_reference(running=0.2, waiting=0.5, samples=60).reference_profile_reusable()


def _profile(lines: str) -> NativeProfile:
    from kernelproof.checks.native_stacks import parse_raw

    profile = parse_raw(lines)
    profile.native = True
    return profile


IN_CALL = "thread (1): fwd (c.py:1);Module._call_impl (torch/nn/modules/module.py:1);"
GEMM = f"{IN_CALL}mkl_blas_sgemm_kernel (libtorch_cpu.so) 80\n"
PRODUCTS = (
    f"{IN_CALL}at::native::mul_kernel (libtorch_cpu.so) 50\n"
    f"{IN_CALL}at::native::sum_kernel_impl (libtorch_cpu.so) 40\n"
)


def _timed(checked: str | None, timed: str) -> TimedStacks:
    from kernelproof.controller.native_audit import TimedStacks

    audit = NativeAudit(None, None)
    audit.reference_stacks = _profile(GEMM)
    audit.candidate_stacks = _profile(checked) if checked is not None else None
    stacks = TimedStacks(audit, None, None)
    stacks.profiles = {"candidate": _profile(timed)}
    return stacks


def test_the_reference_s_gemm_only_while_timed_is_suspect_whatever_the_op_records_say():
    """HACKS row 35: the candidate's own op records (forgeable) name the GEMM's op, yet its
    checked calls, sampled from outside, never ran the GEMM its timed calls ran."""
    findings = _timed(PRODUCTS, GEMM).findings({"aten::addmm": 1}, {"aten::addmm": 1})
    assert [f.severity for f in findings] == [Severity.SUSPECT]
    assert findings[0].variant == "timing:default"
    assert "differently while it is timed" in findings[0].message


def test_a_gemm_used_while_checked_and_while_timed_is_left_to_the_matrix_rule():
    findings = _timed(GEMM, GEMM).findings({"aten::addmm": 1}, {"aten::addmm": 1})
    assert [f.severity for f in findings] == [Severity.INFO]
    assert _timed(PRODUCTS, PRODUCTS).findings({}, {"aten::addmm": 1}) == []


def test_without_a_checked_profile_the_op_audit_decides():
    assert [
        f.severity for f in _timed(None, GEMM).findings({"aten::mul": 1}, {"aten::addmm": 1})
    ] == [Severity.SUSPECT]
    assert [
        f.severity for f in _timed(None, GEMM).findings({"aten::addmm": 1}, {"aten::addmm": 1})
    ] == [Severity.INFO]


def _kernel_audit() -> NativeAudit:
    audit = _audit()
    audit.kernel_level = True
    return audit


def test_any_op_s_kernel_passed_through_is_suspect_unless_the_records_name_the_reference_s_op():
    """HACKS row 35c: forged op records that name none of the reference's ops (a written-out
    softmax) cannot explain stacks spent in the reference's own kernel; records that claim
    custom kernels contradict stacks with no custom code. An honest rewrite that shares the
    kernel (``add`` with ``alpha`` for ``x * s + y``) names the reference's op."""
    forged = {"aten::amax": 1, "aten::exp": 1, "aten::sum": 1, "aten::div": 1}
    assert [f.severity for f in _kernel_audit().findings(forged, {"aten::_softmax": 1})] == [
        Severity.SUSPECT
    ]
    # A GEMM in the records does not explain softmax's kernel either.
    assert [
        f.severity
        for f in _kernel_audit().findings({**forged, "aten::mm": 1}, {"aten::_softmax": 1})
    ] == [Severity.SUSPECT]
    assert [
        f.severity
        for f in _kernel_audit().findings(
            {"aten::_softmax": 1}, {"aten::_softmax": 1}, {"my_kernel": 3}
        )
    ] == [Severity.SUSPECT]
    assert [
        f.severity
        for f in _kernel_audit().findings({"aten::add": 1}, {"aten::mul": 1, "aten::add": 1})
    ] == [Severity.INFO]


class _Freezer:
    def __init__(self, frozen: bool = False) -> None:
        self.watched: set[int] = set()
        self.frozen = frozen
        self.events: list[str] = []

    def freeze(self) -> None:
        self.frozen = True
        self.events.append("freeze")

    def thaw(self) -> None:
        self.frozen = False
        self.events.append("thaw")

    def watch(self, group: int) -> None:
        self.watched.add(group)
        self.events.append("watch")

    def unwatch(self, group: int) -> None:
        self.watched.discard(group)


class _GroupSampler(_Sampler):
    process_group = 4242

    def collect(self) -> NativeProfile:
        return NativeProfile(available=True, native=True, samples=50)


def test_the_timed_sampler_is_frozen_with_the_candidate():
    """Between its batches the candidate is stopped; a sampler still attaching to its stopped
    threads charges them kernel time, which the freezer reads as work done while frozen (an
    honest softmax was accused of it). The timed sampler is stopped with the candidate, as
    the matrix's are, and resumed to end its sampling."""
    worker = _LiveWorker()
    worker.tree = _SchedTree(0.1, 0.0)
    worker.freezer = _Freezer()
    stacks = TimedStacks(NativeAudit(None, None), None, None)
    stacks.samplers = {"candidate": (_GroupSampler(), worker)}
    stacks.start()
    assert worker.freezer.watched == {4242}
    stacks.interrupt()
    assert worker.freezer.watched == set()
    stacks.finish()
    assert worker.freezer.watched == set()


def test_a_frozen_worker_is_resumed_while_its_sampler_attaches_and_frozen_again():
    """py-spy cannot attach to a stopped process: started on a frozen worker and frozen with
    it, it attached only during the worker's short requests, and under load it missed them
    all. The worker is resumed while it attaches, and stopped again with it."""
    attached: list[bool] = []

    class _Attaching(_GroupSampler):
        def wait_ready(self) -> bool:
            attached.append(not worker.freezer.frozen)
            return True

    worker = _LiveWorker()
    worker.tree = _SchedTree(0.1, 0.0)
    worker.freezer = _Freezer(frozen=True)
    stacks = TimedStacks(NativeAudit(None, None), None, None)
    stacks.samplers = {"candidate": (_Attaching(), worker)}
    stacks.start()
    assert attached == [True]  # the worker ran while its sampler attached
    assert worker.freezer.events == ["thaw", "watch", "freeze"]
    assert worker.freezer.frozen and worker.freezer.watched == {4242}
