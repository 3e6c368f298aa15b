"""Headlines read as sentences: the summary of every verdict path, and the terminal's first
line, are cut at word or sentence boundaries, open with no absolute path, and keep the fix
whole."""

from __future__ import annotations

import re

import pytest

from kernelproof.controller.summary import SUMMARY_CHARS, correctness_findings, summarize
from kernelproof.controller.task_faults import explain_task_failure
from kernelproof.report.sentences import (
    ELLIPSIS,
    headline,
    shorten,
    split_cases,
    without_leading_path,
    without_paths,
)
from kernelproof.report.summary_text import HEADLINE_CHARS
from kernelproof.report.summary_text import headline as report_headline
from kernelproof.schema import (
    CorrectnessTest,
    Finding,
    FindingCheck,
    InputVariant,
    Severity,
    TestOutcome,
    VariantKind,
    Verdict,
)

TORCH_TEXT = (
    "RuntimeError: Cannot get CUDA generator without ATen_cuda library. PyTorch splits "
    "its backend into two shared libraries: a CPU library and a CUDA library; this "
    "error has occurred because you are trying to use some CUDA functionality, but "
    "the CUDA library has not been loaded by the dynamic linker for some reason."
)
TASK_PATH = "/home/someone/work/reference-kernels/problems/linalg/cholesky_py/reference.py"

#: The messages a decisive finding carries on each verdict path, as the controller builds them.
MESSAGES: dict[Verdict, list[tuple[FindingCheck, str]]] = {
    Verdict.ERROR: [
        (FindingCheck.TASK, f"{TASK_PATH}: {explain_task_failure(TORCH_TEXT, 'cpu')}."),
        (
            FindingCheck.TASK,
            f"{TASK_PATH}:12: ValueError: the generator of the input "
            "`spectrum_matrix_with_a_very_long_name` takes an argument "
            "`conditioning_number_of_the_generated_matrix` that the entry "
            "does not give. Fix the reference and rerun.",
        ),
        (
            FindingCheck.DEADLINE,
            "not verified within the caller's deadline: stopped during "
            "the matrix stage with no decisive failure found so far. The "
            "deadline, not the candidate, is at fault: give the batch "
            "more time (deadline_s) or fewer candidates per scorer",
        ),
    ],
    Verdict.BROKEN: [
        (
            FindingCheck.BUILD,
            f"the candidate does not build or import ({TASK_PATH}): "
            "error: identifier_that_is_extremely_long_and_unbroken_by_spaces "
            "is undefined in device code at line 42 of the inline extension "
            "source, and 17 further errors were emitted by the compiler",
        ),
    ],
    Verdict.INCORRECT: [],  # from the matrix's own cells, below
    Verdict.SUSPECT: [
        (
            FindingCheck.TAMPERING,
            "the candidate replaced 9 function(s) the harness or torch "
            "relies on: torch.cuda.synchronize, torch.Tensor.copy_, "
            "time.perf_counter_ns, kernelproof.timing.call_timer._clock_ns,"
            " torch.Tensor.clone, torch.Tensor.contiguous, torch.empty",
        ),
    ],
}


def _cells(outcome: TestOutcome, detail: str, n: int = 6) -> list[CorrectnessTest]:
    return [
        CorrectnessTest(
            variant=InputVariant(name=f"shape:batch_size={i}", kind=VariantKind.SHAPE, seed=1),
            seed=1,
            outcome=outcome,
            message=detail,
        )
        for i in range(n)
    ]


def _decisive(verdict: Verdict) -> list[Finding]:
    if verdict is Verdict.INCORRECT:
        return correctness_findings(
            _cells(
                TestOutcome.FAILED,
                "max abs error 3.1e-02 at index (4, 17) where the reference "
                "gives 1.000e+00 and the candidate_output_is_computed_wrongly",
            )
        )
    severity = Severity.SUSPECT if verdict is Verdict.SUSPECT else Severity.FAIL
    forces = None if verdict is Verdict.SUSPECT else verdict
    return [
        Finding(check=check, severity=severity, forces=forces, message=message)
        for check, message in MESSAGES[verdict]
    ]


def _words(text: str) -> set[str]:
    return {w.strip(".,;:'\"()") for w in re.split(r"[\s/]+", text)} - {""}


def assert_reads_as_a_sentence(line: str, message: str, limit: int) -> None:
    """The line holds only whole words of the message, opens with no path, fits its limit,
    and keeps the message's fix whole."""
    assert not re.match(r"^(\w+: )?[/\\]", line), line
    allowed = _words(message) | {"first", "Incorrect", "Suspect", "Broken", "Error"}
    cut = [w for w in _words(line.replace(ELLIPSIS, " ")) if w not in allowed]
    assert not cut, f"words cut or invented: {cut} in {line!r}"
    assert len(line) <= limit + len("Incorrect: ") + len(ELLIPSIS), line
    for fix in (
        "rerun with --device cuda on a machine with a CUDA GPU",
        "Fix the reference and rerun",
        "give the batch more time (deadline_s) or fewer candidates",
    ):
        if fix in message:
            assert fix in line, line


@pytest.mark.parametrize("verdict", [v for v in Verdict if v is not Verdict.VERIFIED])
def test_the_summary_of_every_verdict_path_reads_as_a_sentence(verdict, build_report):
    findings = _decisive(verdict)
    assert findings
    for finding in findings:
        summary = summarize(verdict, [finding], None)
        assert_reads_as_a_sentence(summary, finding.message, SUMMARY_CHARS)
        line = report_headline(build_report(verdict=verdict, summary=summary, findings=[finding]))
        assert_reads_as_a_sentence(line, finding.message, HEADLINE_CHARS)


def test_the_verified_summary_is_a_whole_sentence(verified_report):
    summary = verified_report.summary
    assert re.fullmatch(
        r"Correct on all \d+ tested variants with no integrity finding"
        r"(; worst error [\d.e+-]+x the reference's own)?\.",
        summary,
    ), summary
    assert report_headline(verified_report) == summary


def test_the_cuda_fix_survives_any_limit_that_can_hold_it():
    message = f"{TASK_PATH}: {explain_task_failure(TORCH_TEXT, 'cpu')}."
    for limit in (90, 120, 160, 200, 300):
        line = headline(message, limit)
        assert "rerun with --device cuda on a machine with a CUDA GPU" in line, (limit, line)
        assert line.startswith("reference.py: "), line


def test_torchs_own_text_is_quoted_in_whole_words():
    explained = explain_task_failure(TORCH_TEXT, "cpu")
    quoted = explained.split("(torch: ", 1)[1]
    assert "ATen_cuda li" not in quoted.replace("ATen_cuda library", "")
    assert_reads_as_a_sentence(
        explained,
        TORCH_TEXT + " the task makes CUDA tensors but this "
        "run is on --device cpu: rerun with --device cuda on a machine "
        "with a CUDA GPU torch",
        10_000,
    )


def test_shorten_prefers_a_sentence_then_a_word_and_never_cuts_one():
    text = "The first sentence is here. The second one goes on and on about nothing at all"
    assert shorten(text, 50) == "The first sentence is here" + ELLIPSIS
    assert shorten("alpha beta gamma delta", 13) == "alpha beta" + ELLIPSIS
    assert shorten("unbreakable_identifier_longer_than_the_limit", 10) == (
        "unbreakable_identifier_longer_than_the_limit"
    )
    assert shorten("short", 10) == "short"
    assert shorten("a call (with a parenthesis that is never closed here", 30) == (
        "a call (with a parenthesis" + ELLIPSIS + ")"
    )


def test_a_leading_path_is_shown_by_its_file_name():
    assert without_leading_path(f"{TASK_PATH}:12: bad") == "reference.py:12: bad"
    assert without_leading_path("C:\\tasks\\ref.py: bad") == "ref.py: bad"
    assert without_leading_path("nothing to strip: /a/b") == "nothing to strip: /a/b"
    assert without_paths(f"does not build ({TASK_PATH}): x") == "does not build (reference.py): x"


def test_a_listing_is_split_outside_parentheses():
    assert split_cases("a (x, y), b, c (z)") == ["a (x, y)", "b", "c (z)"]


@pytest.mark.slow
def test_a_cuda_task_on_a_cpu_run_has_a_clean_headline(verified, examples):
    problem = examples / "gpumode_upstream" / "problems" / "pmpp_v2" / "vectorsum_py"
    report = verified(problem / "submission.py", reference=problem, device="cpu")
    assert report.verdict is Verdict.ERROR, report.summary
    task = next(f for f in report.findings if f.severity is Severity.FAIL)
    assert_reads_as_a_sentence(report.summary, task.message, SUMMARY_CHARS)
    assert "rerun with --device cuda" in report_headline(report)


@pytest.mark.parametrize(
    "reference, candidate, verdict",
    [
        ("examples/nope/reference.py", "examples/softmax/correct.py", Verdict.ERROR),
        ("examples/softmax/reference.py", "examples/nope.py", Verdict.BROKEN),
    ],
)
def test_the_early_reports_headline_shows_no_absolute_path(reference, candidate, verdict):
    from pathlib import Path

    from kernelproof.controller.verify import verify

    root = Path(__file__).resolve().parents[2]
    report = verify(root / reference, root / candidate, timing=False)
    assert report.verdict is verdict
    assert str(root) not in report.summary and "check the path" in report.summary
    assert str(root) in " ".join(f.message for f in report.findings)  # the finding keeps it
