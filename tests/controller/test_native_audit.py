"""When stacks sampled from outside make a library passthrough ``suspect``: only where the op
audit inside the candidate missed the op that runs that library kernel."""

from __future__ import annotations

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
