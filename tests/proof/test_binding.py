"""A report's fingerprint: read from its fields every time, so an edited report means what it
says; this machine's side read from /proc and the packages."""

from __future__ import annotations

from kernelproof.proof.probe import isa_flags
from kernelproof.schema import (
    Artifact,
    CodeFacts,
    Environment,
    Finding,
    FindingCheck,
    Report,
    Severity,
    Verdict,
)
from kernelproof.schema.binding import environment_fingerprint, report_fingerprint
from kernelproof.schema.environment_rule import Effect, diff_fingerprints
from kernelproof.schema.fingerprint import FINGERPRINT_SCHEMA

X86 = """processor	: 0
model name	: Intel(R) Xeon(R) Processor
flags		: fpu vme sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c hypervisor arch_perfmon avx512f
processor	: 1
flags		: fpu sse
"""
ARM = "processor\t: 0\nFeatures\t: fp asimd sve atomics\nCPU part\t: 0xd0c\n"


def _report(torch: str = "2.13.0+cpu", schema: str | None = FINGERPRINT_SCHEMA) -> Report:
    environment = Environment(
        device="cpu",
        versions={"torch": torch, "numpy": "2.4.6"},
        threads=1,
        fingerprint_schema=schema,
        arch="x86_64",
        isa=["avx2", "fma"],
        matrix_threads=2,
        cpu_model="Xeon",
    )
    return Report(
        verdict=Verdict.ERROR,
        environment=environment,
        findings=[
            Finding(
                check=FindingCheck.TASK,
                severity=Severity.FAIL,
                forces=Verdict.ERROR,
                message="a canned report",
            )
        ],
        candidate=Artifact(path="c.py", sha256="c" * 64),
        reference=Artifact(path="r.py", sha256="r" * 64),
        settings={"device": "cpu", "seeds": 3, "budget_s": 5.0, "build_s": 1.0},
        code=CodeFacts(languages=["pytorch"]),
    )


def test_isa_flags_keep_instruction_sets_only() -> None:
    assert isa_flags(X86) == [
        "avx",
        "avx2",
        "avx512f",
        "f16c",
        "fma",
        "sse",
        "sse2",
        "sse4_1",
        "sse4_2",
        "ssse3",
    ]
    assert isa_flags(ARM) == ["asimd", "atomics", "fp", "sve"]
    assert isa_flags("") == []


def test_a_report_s_fingerprint_reads_every_part_from_the_report() -> None:
    fingerprint = report_fingerprint(_report())
    components = fingerprint.components
    assert components["torch"] == "2.13.0+cpu" and components["candidate"] == "c" * 64
    assert components["task"] == "r" * 64 and components["isa"] == "avx2 fma"
    assert components["threads"] == "2" and components["timing_threads"] == "1"
    assert fingerprint.languages == ["pytorch"] and fingerprint.recorded
    # Only the settings that shape the matrix are in it: a new budget binds nothing.
    assert fingerprint.matrix_settings == {"device": "cpu", "seeds": 3}


def test_an_edited_torch_version_is_another_torch() -> None:
    diff = diff_fingerprints(
        report_fingerprint(_report()), report_fingerprint(_report(torch="2.14.0+cpu"))
    )
    assert [(c.component, c.effect) for c in diff.changes] == [("torch", Effect.INVALIDATES)]


def test_an_older_report_has_no_thread_components_and_says_so() -> None:
    older = report_fingerprint(_report(schema=None))
    assert not older.recorded and "threads" not in older.components
    current = environment_fingerprint(_report().environment)
    assert diff_fingerprints(older, current).invalidated


def test_the_packet_states_the_hardware_and_whether_a_fingerprint_was_recorded() -> None:
    from kernelproof.report.html import render_html

    page = render_html(_report())
    assert "Xeon (x86_64)" in page and "2 extensions" in page and "avx2 fma" in page
    assert "the correctness matrix ran at 2" in page
    assert "recorded (kernelproof.fingerprint/1)" in page
    assert "not recorded: a report of an older kernelproof" in render_html(_report(schema=None))
