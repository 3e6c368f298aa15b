"""The completion corpus (examples/completions/): what is taken from each realistic and
adversarial completion, or why nothing is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.conftest import EXAMPLES

from kernelproof.rl.completion import extract_candidate

CORPUS = EXAMPLES / "completions"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "expected.yaml").read_text())


def load_completion(path: Path) -> Any:
    """A corpus entry as a trainer hands it over: text, or a conversational message list."""
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else text


def test_every_corpus_file_has_an_expectation_and_back():
    files = {p.name for p in CORPUS.iterdir() if p.name != "expected.yaml"}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_completion(name: str):
    expected = EXPECTED[name]
    extraction = extract_candidate(load_completion(CORPUS / name))
    take = expected["take"]
    if take == "none":
        assert not extraction.ok and extraction.source is None
        assert expected["reason"] in extraction.reason
        return
    assert extraction.ok, extraction.reason
    assert extraction.reason is None
    compile(extraction.source, name, "exec")  # what is taken parses on its own
    assert "class ModelNew" in extraction.source or "ModelNew =" in extraction.source
    if take == "whole":
        assert extraction.block is None
    else:
        assert extraction.block == int(take.split()[1])


def test_reasoning_drafts_are_never_taken():
    extraction = extract_candidate(load_completion(CORPUS / "think_then_answer.md"))
    assert "amax" in extraction.source
    assert any("<think>" in note for note in extraction.notes)
    prompt_opened = extract_candidate(load_completion(CORPUS / "think_opened_in_prompt.md"))
    assert "zeros_like" not in prompt_opened.source


def test_a_copy_of_the_reference_is_left_out_and_named():
    extraction = extract_candidate(load_completion(CORPUS / "reference_copied_first.md"))
    assert "class Model(" not in extraction.source
    assert any("block 0 does not define `ModelNew`" in note for note in extraction.notes)


def test_the_longer_fence_keeps_a_fenced_example_inside_a_docstring():
    extraction = extract_candidate(load_completion(CORPUS / "long_fence_docstring.md"))
    assert "def forward" in extraction.source and "```python" in extraction.source


def test_an_indented_fence_loses_its_indentation():
    extraction = extract_candidate(load_completion(CORPUS / "indented_fence_in_list.md"))
    assert extraction.source.startswith("import torch\n")


def test_the_entry_point_follows_the_task_format():
    completion = load_completion(CORPUS / "gpumode_custom_kernel.md")
    assert extract_candidate(completion, entry_point="custom_kernel").ok


def test_several_different_blocks_are_taken_last_only_when_asked():
    completion = load_completion(CORPUS / "two_modelnew_blocks.md")
    extraction = extract_candidate(completion, multiple="last")
    assert extraction.block == 1 and "amax" in extraction.source
    assert any("the last" in note for note in extraction.notes)


@pytest.mark.parametrize(
    "completion, reason",
    [
        ([{"role": "user", "content": "write a kernel"}], "no answer"),
        ([{"role": "assistant", "content": None}], "no answer"),
        (["not a message"], "is a str"),
        ("x" * (1 << 20 + 1), "over the limit"),
    ],
)
def test_odd_completions_get_a_reason_not_an_exception(completion: Any, reason: str):
    extraction = extract_candidate(completion)
    assert not extraction.ok and reason in extraction.reason


def test_a_truncated_extra_block_after_the_candidate_is_only_noted():
    text = (
        "```python\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n```\n"
        "Test it with:\n```python\nprint(ModelNew()"
    )
    extraction = extract_candidate(text)
    assert extraction.ok and extraction.block == 0
    assert any("not closed" in note for note in extraction.notes)


def test_an_unclosed_think_after_the_answer_does_not_hide_the_answer():
    text = (
        "```python\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    pass\n```\n"
        "<think>now let me double check"
    )
    assert extract_candidate(text).ok
