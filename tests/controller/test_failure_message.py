"""A failure's message keeps what went wrong: a build error opens with the compiler's command
line (over a thousand characters for a load_inline build) and ends with the compiler's error."""

from __future__ import annotations

from kernelproof.controller.matrix import broken_finding
from kernelproof.protocol.messages import CapturedError, Phase, WorkerReply, head_and_tail
from kernelproof.schema import FindingCheck
from kernelproof.workers.process import Response


def _build_error() -> RuntimeError:
    command = "[1/3] /usr/local/cuda/bin/nvcc " + " ".join(
        f"-isystem /include/{i}" for i in range(200)
    )
    return RuntimeError(
        f"Error building extension 'softmax': {command}\n"
        'cuda.cu(53): error: identifier "C10_CUDA_KERNEL_LAUNCH_CHECK" is undefined\n'
        "ninja: build stopped: subcommand failed."
    )


def test_head_and_tail_keeps_both_ends_within_the_limit() -> None:
    text = "start " + "x" * 5000 + " the end"
    clipped = head_and_tail(text, 300)
    assert len(clipped) == 300
    assert clipped.startswith("start ") and clipped.endswith(" the end") and "[...]" in clipped
    assert head_and_tail("short", 300) == "short"


def test_a_build_failure_names_the_compilers_error() -> None:
    error = CapturedError.from_exception(_build_error(), limit=1000)
    assert "C10_CUDA_KERNEL_LAUNCH_CHECK" in error.message
    reply = WorkerReply(ok=False, phase=Phase.BUILD, error=error)
    finding = broken_finding(
        FindingCheck.BUILD,
        "the candidate does not build or import (softmax_cuda_inline.py)",
        Response(reply=reply),
    )
    assert finding.message.startswith("the candidate does not build or import")
    assert "C10_CUDA_KERNEL_LAUNCH_CHECK" in finding.message
    assert len(finding.message) <= 1200
