"""docs/rl.md's snippets are copies of code in tests that run: each ``<!-- snippet: NAME from
PATH -->`` block must equal the region between ``# snippet: NAME`` and ``# end snippet`` in
PATH, dedented."""

from __future__ import annotations

import re
import textwrap

import pytest
from tests.conftest import ROOT

DOC = ROOT / "docs" / "rl.md"
MARKED = re.compile(r"<!-- snippet: (\S+) from (\S+) -->\n```python\n(.*?)```", re.S)


def region(path: str, name: str) -> str:
    text = (ROOT / path).read_text()
    match = re.search(rf"^[ \t]*# snippet: {name}\n(.*?)^[ \t]*# end snippet", text, re.S | re.M)
    assert match is not None, f"{path} has no snippet {name!r}"
    return textwrap.dedent(match.group(1))


def test_the_doc_shows_every_trainer_and_the_agent_set_up():
    assert [name for name, _, _ in MARKED.findall(DOC.read_text())] == [
        "trl",
        "verl",
        "openrlhf",
        "mcp",
    ]


@pytest.mark.parametrize(
    "name, path, shown",
    MARKED.findall(DOC.read_text()),
    ids=lambda value: value if "\n" not in value else "",
)
def test_a_snippet_is_the_tested_code(name: str, path: str, shown: str):
    assert shown == region(path, name), f"docs/rl.md's {name} snippet differs from {path}"
