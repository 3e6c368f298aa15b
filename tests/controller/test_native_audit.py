"""When stacks sampled from outside make a library passthrough ``suspect``: only where the op
audit inside the candidate missed the op that runs that library kernel."""

from __future__ import annotations

from kernelproof.checks.native_stacks import NativeProfile
from kernelproof.controller.native_audit import NativeAudit
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


def _reference(heavy: dict[str, int]) -> NativeProfile:
    return NativeProfile(available=True, native=True, samples=120, heavy_functions=heavy)


def test_a_candidate_is_not_sampled_when_the_reference_uses_no_library_routine():
    # A softmax reference: its heavy frames are ATen's own kernels, no GEMM or oneDNN call a
    # candidate could hide behind, so no candidate profile could be passthrough evidence.
    reference = _reference({"at::native::softmax_lastdim_kernel": 90})
    audit = NativeAudit(_LiveWorker(), _LiveWorker(), reference_stacks=reference)
    assert audit.samplers == {}
    section = audit.finish()
    assert section["candidate"]["available"] is False
    assert "no library routine" in section["candidate"]["reason"]
    assert audit.passthrough is None


def test_a_candidate_is_sampled_when_the_reference_spends_its_time_in_a_gemm():
    reference = _reference({"mkl_blas_avx2_sgemm_kernel_0": 80, "at::native::add_kernel": 10})
    audit = NativeAudit(_LiveWorker(), _LiveWorker(), reference_stacks=reference)
    assert list(audit.samplers) == ["candidate"]


def test_an_unavailable_reference_profile_is_named_as_the_reason():
    reference = NativeProfile(available=False, reason="py-spy is not installed")
    audit = NativeAudit(_LiveWorker(), _LiveWorker(), reference_stacks=reference)
    assert audit.samplers == {}
    assert "py-spy is not installed" in audit.finish()["candidate"]["reason"]
