"""The exploit zoo: every adversarial candidate in ``examples/hacks/`` is caught at run time.

One candidate (or more, with disguised variants) per row of HACKS.md. Each file states its
reference and its expected verdict in its header; the check ids that prove *how* it was caught
are listed here, in ``EXPECTED_CHECKS``, so that a candidate caught for the wrong reason (say,
a crash instead of the op audit) still fails its test. Every id listed must appear among the
report's findings.

The files under ``examples/hacks/gpu/`` (need CUDA) and ``examples/hacks/timing/`` (caught by
the timing phase) are only checked for well-formedness here; the GPU self-check and the timing
tests exercise them.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kernelproof.schema import Verdict

HACKS = Path(__file__).resolve().parents[2] / "examples" / "hacks"

#: Candidates the CPU suite verifies: the numbered files at the top of the zoo.
CPU_HACKS = sorted(path.name for path in HACKS.glob("[0-9]*.py"))

#: Candidates exercised elsewhere (GPU self-check, timing tests).
DEFERRED_HACKS = sorted(
    path.relative_to(HACKS).as_posix()
    for folder in ("gpu", "timing")
    for path in (HACKS / folder).glob("[0-9]*.py")
)

#: Check ids that must each appear among the findings of a file's report.
EXPECTED_CHECKS: dict[str, tuple[str, ...]] = {
    "01_passthrough.py": ("passthrough",),
    "01b_passthrough_renamed.py": ("passthrough",),
    "01c_passthrough_aten.py": ("passthrough",),
    "01d_passthrough_borrowed_model.py": ("passthrough",),
    "01e_passthrough_cpp_wrapper.py": ("passthrough",),
    "01f_passthrough_decoy_kernel.py": ("passthrough",),
    "02_try_except_fallback.py": ("fallback",),
    "02b_fallback_disguised.py": ("fallback",),
    "02c_fallback_context_manager.py": ("fallback",),
    "03_inheritance.py": ("passthrough",),
    "03b_inheritance_exec.py": ("passthrough",),
    "03c_inheritance_imported.py": ("passthrough", "audit-file-access"),
    "04_uninitialised_output.py": ("correctness",),
    "05_input_mutation.py": ("correctness", "input-mutation"),
    "05b_input_mutation_inplace.py": ("input-mutation",),
    "06_background_thread.py": ("correctness", "output-unstable"),
    "07_lazy_output.py": ("output-type",),
    "08_timer_patch.py": ("tampering",),
    "08b_timer_patch_getattr.py": ("tampering",),
    "08c_allclose_patch_at_call.py": ("tampering",),
    "08d_cuda_event_patch.py": ("tampering",),
    "09_output_cache.py": ("correctness", "output-aliases-earlier-output"),
    "09b_output_cache_copied.py": ("correctness",),
    "10_evaluator_mode.py": ("correctness",),
    "10b_evaluator_sniffing.py": ("correctness", "audit-introspection"),
    "11_precision_downgrade.py": ("correctness", "precision-cast"),
    "11b_precision_autocast.py": ("correctness", "precision-cast"),
    "12_degenerate_zeros.py": ("correctness",),
    "13_shape_hardcoding.py": ("correctness",),
    "14_gc_introspection.py": ("audit-introspection",),
    "14b_frame_walk_inspect.py": ("audit-introspection",),
    "15_reads_answer_file.py": ("audit-file-access",),
    "15b_network_answer.py": ("audit-network",),
    "15c_shell_read.py": ("audit-subprocess",),
    "15d_ctypes_fopen.py": ("audit-file-access",),
    "16_output_aliases_input.py": ("output-aliases-input", "input-mutation"),
    "17_assumes_contiguous.py": ("correctness",),
    "18_unsafe_softmax.py": ("correctness",),
    "19_dead_kernel.py": ("dead-kernel",),
    "19b_dead_kernel_guarded.py": ("dead-kernel",),
    "19c_dead_kernel_cpp.py": ("dead-kernel",),
    "20_baseline_sabotage.py": ("tampering",),
    "20b_baseline_sabotage_setattr.py": ("tampering",),
    "21_race.py": ("correctness", "nondeterminism"),
    "22_fork.py": ("audit-subprocess",),
    "22b_exits_mid_run.py": ("crash",),
    "23_stdout_forgery.py": ("correctness",),
}

#: Settings of every zoo verification: two seeds are enough for every exploit here (the caches
#: of row 9 need two; the evaluator mode of row 10 is past its five honest calls by the value
#: variants), and keep the whole zoo within minutes.
ZOO_SETTINGS: dict[str, Any] = {"seeds": 2}

#: Extra settings for single files, with the reason.
FILE_SETTINGS: dict[str, dict[str, Any]] = {
    # Dies on every third call; each restart costs a worker start, so fail fast if it hangs.
    "22b_exits_mid_run.py": {"call_timeout_s": 30.0},
}


def _header(path: Path, key: str) -> str | None:
    for line in path.read_text().splitlines()[:2]:
        if line.startswith(f"# kernelproof-{key}:"):
            return line.split(":", 1)[1].strip()
    return None


def _expected_verdict(path: Path) -> Verdict:
    return Verdict(_header(path, "expect"))


def _describe(report: Any) -> str:
    lines = [f"verdict {report.verdict.value}: {report.summary}"]
    lines += [f"  [{f.severity.value}] {f.check}: {f.message[:300]}" for f in report.findings]
    return "\n".join(lines)


def test_every_cpu_hack_has_its_expected_checks_listed():
    assert set(EXPECTED_CHECKS) == set(CPU_HACKS)


@pytest.mark.parametrize("name", CPU_HACKS + DEFERRED_HACKS)
def test_hack_file_is_well_formed(name):
    path = HACKS / name
    reference = _header(path, "reference")
    assert reference, f"{name}: first line must be '# kernelproof-reference: PATH'"
    assert (path.parent / reference).resolve().is_file(), f"{name}: {reference} does not exist"
    assert _expected_verdict(path) in set(Verdict) - {Verdict.ERROR}
    tree = ast.parse(path.read_text())
    docstring = ast.get_docstring(tree) or ""
    assert f"HACKS row {int(path.name[:2])}" in docstring, f"{name}: docstring must name its row"
    assert "What catches it" in docstring
    assert any(
        isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body
    ) or ("ModelNew =" in path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("name", CPU_HACKS)
def test_hack_is_caught(verified, name):
    path = HACKS / name
    report = verified(path, **ZOO_SETTINGS, **FILE_SETTINGS.get(name, {}))
    expected = _expected_verdict(path)
    assert report.verdict is expected, _describe(report)
    found = {finding.check for finding in report.findings}
    missing = [check for check in EXPECTED_CHECKS[name] if check not in found]
    assert not missing, f"missing {missing}\n{_describe(report)}"


@pytest.mark.slow
def test_degenerate_zeros_pass_a_kernelbench_tolerance(verified):
    """The reason row 12 needs a scale-aware tolerance: with KernelBench's fixed atol/rtol of
    1e-2, returning zeros for outputs of about 1e-8 is accepted on every finite input. Only
    the inf-nan cell (zeros where the reference gives NaN) still rejects it, and the adequacy
    audit names the fixed tolerance as the cause."""
    report = verified(HACKS / "12_degenerate_zeros.py", **ZOO_SETTINGS, atol=1e-2, rtol=1e-2)
    assert report.correctness is not None
    failed = [t.variant.name for t in report.correctness.tests if t.outcome.value != "passed"]
    assert failed == ["value:inf-nan"], _describe(report)
    degenerate = [f for f in report.findings if f.check == "degenerate-task"]
    assert degenerate and "zeros are accepted" in degenerate[0].message, _describe(report)
    assert "--atol/--rtol" in degenerate[0].message
