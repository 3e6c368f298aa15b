"""The op audit's passthrough rule and heavy ops run at double width (issue 25, class 1): an
honest matvec accumulated in float64 calls ``aten::mm`` as the float32 reference does, but on
another, slower kernel; passing the reference's op through at its own width is still caught."""

from __future__ import annotations

import torch

from kernelproof.checks.op_policy import CallOps, audit_ops
from kernelproof.checks.op_recorder import OpRecorder
from kernelproof.schema import FindingCheck


def _recorded(fn, *args: torch.Tensor) -> dict:
    with OpRecorder(working_dtype=torch.float32) as recorder:
        fn(*args)
    return recorder.summary()


def _passthrough(candidate) -> bool:
    a, b = torch.randn(64, 32), torch.randn(32, 1)
    reference = _recorded(torch.matmul, a, b)
    calls = [CallOps("default", _recorded(candidate, a, b), reference)]
    result = audit_ops(calls, declared_kernels=[], allow_torch=False, strict=False)
    return any(f.check == FindingCheck.PASSTHROUGH for f in result.findings)


def test_the_reference_op_at_double_width_is_not_its_work():
    recorded = _recorded(
        lambda a, b: torch.matmul(a.double(), b.double()).float(),
        torch.randn(8, 4),
        torch.randn(4, 1),
    )
    assert recorded["widened"].get("aten::mm") == 1, recorded
    assert not _passthrough(lambda a, b: torch.matmul(a.double(), b.double()).float())


def test_the_reference_op_at_its_own_width_is_still_passthrough():
    assert _passthrough(lambda a, b: torch.matmul(a, b))
    # A float32 mm beside a float64 one: the reference's work is in it all the same.
    assert _passthrough(lambda a, b: (torch.matmul(a, b), torch.matmul(a.double(), b.double())))


def test_widening_counts_only_where_the_task_is_float32():
    with OpRecorder(working_dtype=torch.float64) as recorder:
        torch.matmul(torch.randn(4, 4, dtype=torch.float64), torch.randn(4, 1, dtype=torch.float64))
    assert not recorder.summary()["widened"]
