"""GPU MODE problems in their published layout: problems/<suite>/<problem>/ with task.yml naming
``../utils.py`` among its sources (examples/gpumode_upstream/ copies that layout)."""

from pathlib import Path

import pytest

from kernelproof.controller.task_faults import explain_task_failure
from kernelproof.errors import TaskError
from kernelproof.schema import Severity, Verdict
from kernelproof.tasks.formats import load_task

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def suite(examples: Path) -> Path:
    return examples / "gpumode_upstream" / "problems" / "pmpp_v2"


def test_honest_submission_importing_task_and_parent_utils_is_verified(verified, suite):
    problem = suite / "vectoradd_py"
    report = verified(problem / "submission.py", reference=problem)
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert not [f for f in report.findings if f.check.startswith("audit")], report.findings


def test_sources_named_in_task_yml_are_readable_by_the_candidate(suite, tmp_path):
    problem = suite / "vectoradd_py"
    loaded = load_task(problem, problem / "submission.py", tmp_path)
    assert str((suite / "utils.py").resolve()) in loaded.readable_paths
    assert str((problem / "task.py").resolve()) in loaded.readable_paths


def test_a_missing_named_source_is_a_task_error(suite, tmp_path):
    problem = tmp_path / "problem"
    problem.mkdir()
    for name in ("reference.py", "task.py", "submission.py"):
        (problem / name).write_text((suite / "vectoradd_py" / name).read_text())
    (problem / "task.yml").write_text(
        (suite / "vectoradd_py" / "task.yml").read_text().replace("../utils.py", "../nowhere.py")
    )
    with pytest.raises(TaskError, match="nowhere.py"):
        load_task(problem, problem / "submission.py", tmp_path / "scratch")


def test_import_error_in_the_tasks_own_files_blames_the_task(verified, suite):
    problem = suite / "broken_task_py"
    report = verified(problem / "submission.py", reference=problem)
    assert report.verdict is Verdict.ERROR, report.summary
    task = next(f for f in report.findings if f.severity is Severity.FAIL)
    assert "task's own files" in task.message and "TypeVra" in task.message


def test_cuda_task_on_a_cpu_run_names_the_device_flag(verified, suite):
    problem = suite / "vectorsum_py"
    report = verified(problem / "submission.py", reference=problem, device="cpu")
    assert report.verdict is Verdict.ERROR, report.summary
    task = next(f for f in report.findings if f.severity is Severity.FAIL)
    assert "--device cuda" in task.message
    assert "\n" not in task.message and "dynamic linker" not in task.message


def test_other_failures_keep_their_own_text():
    assert explain_task_failure("ValueError: bad size", "cpu") == "ValueError: bad size"
    cuda = "RuntimeError: Torch not compiled with CUDA enabled"
    assert explain_task_failure(cuda, "cuda") == cuda
