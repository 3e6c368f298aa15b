"""The op audit's verdict: what the candidate's recorded ops say about how it computes.

Compares, call by call, the ops the candidate ran with the ops the reference ran on the same
inputs (DESIGN.md, op-audit policy):

* passthrough: every heavy op of the reference ran in the candidate too (custom kernels
  alongside do not change that: they may be decoys);
* dead kernel: custom kernels are defined in the source, none ever ran;
* fallback: custom kernels ran on some calls and not on others;
* precision casts: reduced-precision computation inside a wider-dtype task.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kernelproof.schema import Finding, FindingCheck, OpAudit, Severity

#: Ops that move, view, allocate or convert data without computing: they do not make a
#: candidate "the reference" and are not the work a kernel replaces.
LIGHT_OPS = frozenset(
    "aten::" + name
    for name in [
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
        "new_empty_strided",
        "zeros",
        "zeros_like",
        "ones",
        "ones_like",
        "full",
        "full_like",
        "fill_",
        "zero_",
        "arange",
        "to",
        "_to_copy",
        "copy_",
        "clone",
        "contiguous",
        "detach",
        "detach_",
        "resolve_conj",
        "resolve_neg",
        "lift_fresh",
        "alias",
        "as_strided",
        "view",
        "reshape",
        "_reshape_alias",
        "_unsafe_view",
        "expand",
        "expand_as",
        "permute",
        "transpose",
        "t",
        "select",
        "slice",
        "unsqueeze",
        "squeeze",
        "flatten",
        "unflatten",
        "split",
        "split_with_sizes",
        "chunk",
        "narrow",
        "unbind",
        "item",
        "_local_scalar_dense",
        "result_type",
        "set_",
        "numpy_T",
        "view_as",
        "movedim",
        "lift",
        "stride",
        "size",
        "is_nonzero",
        "_has_compatible_shallow_copy_type",
        "unsqueeze_",
        "squeeze_",
        "as_strided_",
        "transpose_",
        "t_",
        "resize_",
        "resize_as_",
        "swapdims_",
        "swapaxes_",
        "unfold",
        "diagonal",
        "view_as_real",
        "view_as_complex",
        "_reshape_copy",
    ]
)

#: Dispatcher namespaces that belong to torch itself; any other namespace is a custom op.
TORCH_NAMESPACES = frozenset({"aten", "prim", "prims", "profiler", "inductor", "_c10d_functional"})


@dataclass(frozen=True)
class CallOps:
    """The ops recorded on one variant, in the candidate and in the reference."""

    variant: str
    candidate: dict[str, Any]
    reference: dict[str, Any]


def heavy_ops(ops: dict[str, Any]) -> Counter[str]:
    """The compute ops that ran, at the leaves of the op tree (where the work happens), so
    that calling ``aten::_softmax`` directly counts the same as ``torch.softmax``."""
    source = ops.get("leaves") or ops.get("aten", {})
    return Counter(
        {
            name: count
            for name, count in source.items()
            if name.startswith("aten::") and name not in LIGHT_OPS
        }
    )


#: Aten ops that end in the same library kernel, named by it. Comparing op names alone let a
#: candidate pass the reference's GEMM through under another name (``einsum`` lowers to
#: ``bmm``; the reference calls ``mm``): the work is done by the same BLAS routine.
KERNEL_FAMILIES = {
    **{
        f"aten::{name}": "gemm (BLAS)"
        for name in (
            "mm",
            "bmm",
            "addmm",
            "baddbmm",
            "addbmm",
            "matmul",
            "mv",
            "addmv",
            "dot",
            "vdot",
            "_addmm_activation",
            "linear",
            "einsum",
            "tensordot",
            "mkldnn_linear",
        )
    },
    **{
        f"aten::{name}": "convolution (oneDNN/cuDNN)"
        for name in (
            "convolution",
            "_convolution",
            "conv1d",
            "conv2d",
            "conv3d",
            "mkldnn_convolution",
            "_mkldnn_convolution",
            "cudnn_convolution",
            "slow_conv2d_forward",
            "thnn_conv2d",
            "_slow_conv2d_forward",
            "conv_transpose2d",
            "convolution_overrideable",
        )
    },
}


def own_heavy_ops(ops: dict[str, Any]) -> Counter[str]:
    """The heavy ops that can be the reference's work: those run at double width where the
    task's dtype is float32 (``widened``: an honest matvec accumulated in float64 calls
    ``aten::mm`` too) are another, slower kernel, and passing them through gains nothing."""
    return heavy_ops(ops) - Counter(ops.get("widened", {}))


def kernel_families(heavy: Counter[str]) -> Counter[str]:
    """Heavy ops grouped by the library kernel that does their work."""
    grouped: Counter[str] = Counter()
    for name, count in heavy.items():
        grouped[KERNEL_FAMILIES.get(name, name)] += count
    return grouped


def custom_kernels(ops: dict[str, Any]) -> Counter[str]:
    found = Counter(ops.get("custom", {}))
    for name, count in ops.get("aten", {}).items():
        if name.split("::", 1)[0] not in TORCH_NAMESPACES:
            found[f"op:{name}"] += count
    return found


@dataclass
class OpAuditResult:
    findings: list[Finding] = field(default_factory=list)
    summary: OpAudit | None = None


def audit_ops(
    calls: list[CallOps],
    *,
    declared_kernels: list[str],
    allow_torch: bool,
    strict: bool,
) -> OpAuditResult:
    """Findings and a summary from every compared call's recorded ops."""
    if not calls:
        return OpAuditResult()
    result = OpAuditResult()
    per_call_custom = {c.variant: custom_kernels(c.candidate) for c in calls}
    total_custom: Counter[str] = sum(per_call_custom.values(), Counter())
    with_custom = [v for v, k in per_call_custom.items() if k]
    without_custom = [v for v, k in per_call_custom.items() if not k]
    compiled = any(c.candidate.get("compiled") for c in calls)
    first = calls[0]
    candidate_heavy, reference_heavy = heavy_ops(first.candidate), heavy_ops(first.reference)
    # Every heavy op of the reference ran in the candidate: whatever else ran (a decoy
    # custom kernel, a C++ wrapper around torch::softmax), the reference did the work.
    # Or it ran the same library kernels under other op names and nothing else (einsum for a
    # matmul: the same GEMM). A rewrite that adds work of its own around the library call (a
    # matmul with an unfused bias and clamp instead of addmm + relu) is a PyTorch rewrite.
    passthrough = [
        c.variant
        for c in calls
        if not c.candidate.get("compiled")
        and heavy_ops(c.reference)
        and (
            _contains(own_heavy_ops(c.candidate), heavy_ops(c.reference))
            or _same_kernels(own_heavy_ops(c.candidate), heavy_ops(c.reference))
        )
    ]
    add = result.findings.append
    # Every compared call produced outputs; one with nothing recorded at all (no dispatcher op,
    # no custom kernel) had its recorder blinded: record_function turned off, the work done on
    # a thread the profiler does not follow. That is not "a rewrite with no ops".
    silent = [
        c.variant for c in calls if not c.candidate.get("aten") and not c.candidate.get("custom")
    ]
    if silent:
        add(
            Finding(
                check=FindingCheck.OP_AUDIT_CONTRADICTION,
                severity=Severity.SUSPECT,
                message=f"{len(silent)} of {len(calls)} calls produced outputs while the op audit "
                "inside the candidate recorded no work at all: the audit was blinded "
                "(profiling switched off, work on an unprofiled thread), so nothing it "
                "says about this candidate can be believed",
                evidence={"variants": silent[:20]},
            )
        )
    if declared_kernels and not total_custom:
        add(
            Finding(
                check=FindingCheck.DEAD_KERNEL,
                severity=Severity.SUSPECT,
                message=f"the source defines custom kernel(s) {', '.join(declared_kernels[:6])} but "
                f"none ran in {len(calls)} calls: the work was done by other code",
                evidence={"declared": declared_kernels, "calls": len(calls)},
            )
        )
    if with_custom and without_custom:
        add(
            Finding(
                check=FindingCheck.FALLBACK,
                severity=Severity.SUSPECT,
                message=f"custom kernels ran on {len(with_custom)} call(s) but not on "
                f"{len(without_custom)}: another path (typically PyTorch) answered those: "
                + ", ".join(without_custom[:6]),
                evidence={"without_custom": without_custom, "with_custom": with_custom[:20]},
            )
        )
    if passthrough:
        add(
            Finding(
                check=FindingCheck.PASSTHROUGH,
                severity=Severity.INFO if allow_torch else Severity.SUSPECT,
                message=f"on {len(passthrough)} of {len(calls)} calls the candidate ran every heavy "
                "op the reference runs"
                + (" (besides its custom kernels)" if total_custom else "")
                + ": it passes the reference's work through to PyTorch"
                + (" (allowed by --allow-torch)" if allow_torch else ""),
                evidence={
                    "reference_ops": dict(reference_heavy),
                    "candidate_ops": dict(candidate_heavy),
                    "variants": passthrough[:20],
                },
            )
        )
    if strict:
        shared = sorted(
            set().union(*(set(heavy_ops(c.candidate)) & set(heavy_ops(c.reference)) for c in calls))
        )
        if shared:
            add(
                Finding(
                    check=FindingCheck.STRICT_HEAVY_OP,
                    severity=Severity.SUSPECT,
                    message=f"--strict: the candidate runs the reference's heavy op(s) "
                    f"{', '.join(shared[:6])} instead of a kernel of its own",
                    evidence={"ops": shared},
                )
            )
    low = sum((Counter(c.candidate.get("low_precision", {})) for c in calls), Counter())
    if low:
        add(
            Finding(
                check=FindingCheck.PRECISION_CAST,
                severity=Severity.WARN,
                message="reduced-precision (fp16/bf16) computation inside a wider-dtype task: "
                + ", ".join(f"{k} x{v}" for k, v in low.most_common(5)),
                evidence={"ops": dict(low)},
            )
        )
    removed = [c.variant for c in calls if c.candidate.get("hook_removed")]
    if removed:
        add(
            Finding(
                check=FindingCheck.TAMPERING,
                severity=Severity.SUSPECT,
                message="the candidate removed the harness's profiling hook during a call",
                evidence={"variants": removed[:20]},
            )
        )
    if total_custom:
        torch_ops = sorted(candidate_heavy)
        add(
            Finding(
                check=FindingCheck.CUSTOM_KERNELS,
                severity=Severity.INFO,
                message="custom kernels ran: "
                + ", ".join(f"{k} x{v}" for k, v in total_custom.most_common(6))
                + (f"; torch ops also used: {', '.join(torch_ops[:6])}" if torch_ops else ""),
                evidence={"kernels": dict(total_custom), "torch_ops": torch_ops},
            )
        )
    elif compiled:
        add(
            Finding(
                check=FindingCheck.TORCH_COMPILE,
                severity=Severity.INFO,
                message="the candidate runs torch.compile-generated code; its speedup over the "
                "torch.compile baseline shows whether it adds anything",
            )
        )
    elif not passthrough and candidate_heavy:
        add(
            Finding(
                check=FindingCheck.TORCH_REWRITE,
                severity=Severity.INFO,
                message="a pure PyTorch rewrite with different ops: "
                + ", ".join(sorted(candidate_heavy)[:8]),
                evidence={
                    "candidate_ops": dict(candidate_heavy),
                    "reference_ops": dict(reference_heavy),
                },
            )
        )
    result.summary = OpAudit(
        reference_ops=dict(reference_heavy),
        candidate_ops=dict(candidate_heavy),
        custom_kernels=dict(total_custom),
        declared_kernels=declared_kernels,
        calls=len(calls),
        calls_with_custom=len(with_custom),
        compiled=compiled,
        low_precision_ops=dict(low),
    )
    return result


def _same_kernels(candidate: Counter[str], reference: Counter[str]) -> bool:
    """The same library kernels, as often, under other op names, and no other heavy op."""
    grouped = kernel_families(candidate)
    return bool(set(grouped) & set(KERNEL_FAMILIES.values())) and (
        grouped == kernel_families(reference)
    )


def _contains(candidate: Counter[str], reference: Counter[str]) -> bool:
    return all(candidate[name] >= count for name, count in reference.items())
