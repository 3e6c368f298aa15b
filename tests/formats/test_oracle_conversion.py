"""The float64 oracle converts every tensor a model holds; where no oracle can be built, the
reference in its own dtype stands in, with a wider tolerance, and the report says so."""

import pytest
import torch

from kernelproof.schema import Severity, TestOutcome, Verdict
from kernelproof.tasks.inputs import oracle_inputs, to_float64

pytestmark = pytest.mark.slow


def test_gru_with_a_plain_h0_attribute_gets_a_float64_oracle(verified, examples):
    folder = examples / "formats" / "oracle"
    # Fixed shapes: sizing the grown shape variants of an RNN on the meta device took 244 s
    # here (seq_len 131073 is unrolled step by step); the oracle is what this test is about.
    report = verified(
        folder / "gru_h0_same.py",
        reference=folder / "gru_h0.py",
        allow_torch=True,
        shape_variants=False,
    )
    assert report.verdict is Verdict.VERIFIED, report.summary
    assert not [f for f in report.findings if f.check == "oracle"]
    seeds = [t for t in report.correctness.tests if t.variant.kind.value == "seed"]
    assert seeds and all(t.outcome is TestOutcome.PASSED for t in seeds)


def test_a_task_that_cannot_run_in_float64_falls_back_and_says_so(verified, examples):
    folder = examples / "formats" / "oracle"
    report = verified(folder / "fixed_dtype_rewrite.py", allow_torch=True)
    assert report.verdict is Verdict.VERIFIED, report.summary
    notes = [f for f in report.findings if f.check == "oracle"]
    assert len(notes) == 1 and notes[0].severity is Severity.WARN
    assert "no float64 oracle" in notes[0].message and "wider tolerance" in notes[0].message


def test_a_wrong_answer_still_fails_without_an_oracle(verified, examples, tmp_path):
    folder = examples / "formats" / "oracle"
    wrong = tmp_path / "off_by_a_percent.py"
    wrong.write_text(
        (folder / "fixed_dtype_rewrite.py")
        .read_text()
        .replace("return torch.addmm(", "return 1.01 * torch.addmm(")
    )
    report = verified(wrong, reference=folder / "fixed_dtype.py", allow_torch=True)
    assert report.verdict is Verdict.INCORRECT, report.summary


def test_to_float64_reaches_into_containers_and_leaves_the_rest():
    h0 = torch.randn(2, 3)
    converted = to_float64({"h": [h0, (h0, 3)], "n": torch.arange(3)})
    assert converted["h"][0].dtype == torch.float64
    assert converted["h"][1][0].dtype == torch.float64 and converted["h"][1][1] == 3
    assert converted["n"].dtype == torch.int64
    assert oracle_inputs([[h0]])[0][0].dtype == torch.float64
