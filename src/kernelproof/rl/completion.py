"""From a model's completion to a candidate: the one place a completion's code is taken.

A completion is what a policy or an agent wrote: markdown with prose, one or several fenced
code blocks, maybe a ``<think>`` section, maybe cut off at the token limit. The glue that
takes its code is where reward hacking re-enters (the wrong block verified, code stitched
from prose, a draft inside the reasoning rewarded), so the rules here are few and strict:

1. A conversational completion (a list of ``{"role", "content"}`` messages) is read from its
   last assistant message; content given as parts keeps its text parts.
2. Reasoning is never code: ``<think>``/``<thinking>``/``<reasoning>`` sections are dropped,
   and so is everything before a closing tag whose opening is in the prompt. A completion
   that ends inside its reasoning has no answer.
3. Code is taken only from fenced blocks (CommonMark fences: three or more backticks or
   tildes, closed by the same character at least as long), whose info string is a Python
   language tag or empty. Code in the prose is never taken or stitched to a block. Only when
   the answer has no fence at all is the whole answer taken, and only if it parses.
4. The candidate is the one block that defines the entry point (``ModelNew``, or
   ``custom_kernel`` for GPU MODE tasks) at module level. Several different such blocks are
   ambiguous and refused (unless ``multiple="last"``); identical repeats count once.
5. A block that is not closed (the completion was cut off) is refused, even when it parses:
   a truncated program that still imports is not what the model meant.
6. The block must parse; its other blocks (a copy of the reference, a usage example) are
   left out and named in the notes.

Whatever is taken is then verified like any candidate: nothing here judges the code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kernelproof import python_ast

__all__ = ["Extraction", "MAX_COMPLETION_CHARS", "completion_text", "extract_candidate"]

#: Longest completion read, in characters: far beyond any kernel a model writes (the
#: server's source limit is 256 KiB), short enough that a runaway generation costs nothing.
MAX_COMPLETION_CHARS = 1 << 20

#: Info-string languages whose blocks are Python. An empty info string counts too: models
#: often leave it out.
PYTHON_TAGS = frozenset({"python", "py", "python3", "py3", "pytorch", "torch"})

#: Tags that open a reasoning section, which is never code.
REASONING_TAGS = ("think", "thinking", "reasoning")

#: A CommonMark fence line: up to three spaces, then three or more backticks or tildes, then
#: the info string (a backtick fence's info string may not contain a backtick).
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)$")

_REASONING_OPEN = re.compile(r"<(%s)>" % "|".join(REASONING_TAGS), re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a completion."""

    index: int
    """Its position among the completion's blocks (0-based)."""

    language: str
    """The first word of its info string, lower case; empty when it had none."""

    code: str
    closed: bool
    """False when the completion ended before its closing fence."""

    @property
    def is_python(self) -> bool:
        return self.language == "" or self.language in PYTHON_TAGS


@dataclass(frozen=True)
class Extraction:
    """What :func:`extract_candidate` took from a completion, or why it took nothing."""

    source: str | None
    """The candidate's source; None when none could be taken."""

    reason: str | None = None
    """Why no candidate could be taken (None when one was): shown to the model and recorded
    with its zero reward."""

    block: int | None = None
    """Which fenced block was taken (0-based); None for an unfenced answer or none taken."""

    blocks: int = 0
    """Fenced blocks seen in the answer (reasoning excluded)."""

    notes: list[str] = field(default_factory=list)
    """What was left out and why (another block, a copy of the reference, reasoning)."""

    @property
    def ok(self) -> bool:
        return self.source is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "block": self.block,
            "blocks": self.blocks,
            "notes": list(self.notes),
        }


def completion_text(completion: str | Sequence[Mapping[str, Any]] | Mapping[str, Any]) -> str:
    """The text of a completion: a string as it is; a conversational completion (TRL's
    ``[{"role": "assistant", "content": ...}]``, or one message) as its last assistant
    message's content, with list content joined from its text parts."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else list(completion)
    for message in reversed(messages):
        if not isinstance(message, Mapping):
            raise TypeError(
                f"a conversational completion is a list of {{'role', 'content'}} "
                f"dicts; one item is a {type(message).__name__}"
            )
        if message.get("role", "assistant") == "assistant":
            return _content_text(message.get("content"))
    return ""


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and part.get("type", "text") == "text":
                parts.append(str(part.get("text", "")))
        return "".join(parts)
    return str(content)


def extract_candidate(
    completion: str | Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    entry_point: str = "ModelNew",
    multiple: Literal["refuse", "last"] = "refuse",
) -> Extraction:
    """Take the candidate's source from a model's completion (see the module's rules), or say
    why none can be taken. Never raises for a bad completion.

    ``entry_point``: the name the candidate must define (``ModelNew`` for KernelBench tasks,
    ``custom_kernel`` for GPU MODE ones). ``multiple``: what to do when several different
    blocks define it: ``refuse`` (the default: ambiguous) or take the ``last``."""
    try:
        text = completion_text(completion)
    except TypeError as exc:
        return Extraction(None, str(exc))
    if len(text) > MAX_COMPLETION_CHARS:
        return Extraction(
            None,
            f"the completion is {len(text)} characters, over the limit of "
            f"{MAX_COMPLETION_CHARS}: not read",
        )
    notes: list[str] = []
    answer, problem = _without_reasoning(text, notes)
    if answer is None:
        return Extraction(None, problem, notes=notes)
    blocks = _fenced_blocks(answer)
    if not blocks:
        return _unfenced(answer, entry_point, notes)
    return _from_blocks(blocks, entry_point, multiple, notes)


def _without_reasoning(text: str, notes: list[str]) -> tuple[str | None, str | None]:
    """The answer: the text with its reasoning sections removed. None (and why) when the
    completion ends inside one."""
    for tag in REASONING_TAGS:
        close = f"</{tag}>"
        lowered = text.lower()
        last_close = lowered.rfind(close)
        if (
            last_close >= 0
            and lowered.rfind(f"<{tag}>", 0, last_close) < 0
            and lowered.find(f"<{tag}>") < 0
        ):
            # Opened by the chat template in the prompt (DeepSeek-R1, Qwen3): all of it before
            # the closing tag is reasoning.
            notes.append(
                f"the text before </{tag}> was reasoning (opened in the prompt) and was not read"
            )
            text = text[last_close + len(close) :]
    pieces: list[str] = []
    position = 0
    while True:
        opened = _REASONING_OPEN.search(text, position)
        if opened is None:
            pieces.append(text[position:])
            break
        pieces.append(text[position : opened.start()])
        tag = opened.group(1).lower()
        closing = re.compile(rf"</{tag}>", re.IGNORECASE).search(text, opened.end())
        if closing is None:
            if "".join(pieces).strip():
                notes.append(f"an unclosed <{tag}> section at the end was not read")
                break
            return None, (
                f"the completion ends inside its <{tag}> section (cut off while "
                "reasoning): it has no answer to take code from"
            )
        notes.append(f"a <{tag}> section was not read (reasoning is never code)")
        position = closing.end()
    return "".join(pieces), None


def _fenced_blocks(text: str) -> list[Block]:
    """The fenced code blocks of ``text``, in order (CommonMark's rules for fences)."""
    blocks: list[Block] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None or (match["fence"][0] == "`" and "`" in match["info"]):
            index += 1
            continue
        fence, indent = match["fence"], len(match["indent"])
        language = match["info"].strip().split(" ")[0].split("{")[0].lower()
        body: list[str] = []
        index += 1
        closed = False
        while index < len(lines):
            line = lines[index]
            stripped = line.lstrip(" ")
            if (
                len(line) - len(stripped) <= 3
                and stripped.rstrip() == fence[0] * len(stripped.rstrip())
                and len(stripped.rstrip()) >= len(fence)
            ):
                closed = True
                index += 1
                break
            # Content lines lose up to the fence's own indentation.
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            index += 1
        blocks.append(Block(len(blocks), language, "\n".join(body).strip("\n") + "\n", closed))
    return blocks


def _defines(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        if (
            isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == name
        ):
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            return True
    return False


def _mentions(code: str, name: str) -> bool:
    return (
        re.search(
            rf"^\s*(class|def)\s+{re.escape(name)}\b|^\s*{re.escape(name)}\s*=", code, re.MULTILINE
        )
        is not None
    )


def _parse(code: str) -> tuple[ast.Module | None, str | None]:
    try:
        return python_ast.parse(code), None
    except SyntaxError as exc:
        return None, f"line {exc.lineno}: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, f"{type(exc).__name__}: {str(exc)[:200]}"


def _unfenced(answer: str, entry_point: str, notes: list[str]) -> Extraction:
    """An answer with no fence: taken whole only when it is a Python module defining the
    entry point (a model that answers with bare code)."""
    if not answer.strip():
        return Extraction(
            None, "the completion has no answer (empty after its reasoning)", notes=notes
        )
    tree, error = _parse(answer)
    if tree is None or not _defines(tree, entry_point):
        mentioned = (
            " (the prose mentions it, but code outside a fenced block is never taken)"
            if entry_point in answer
            else ""
        )
        return Extraction(
            None,
            f"no fenced code block, and the answer is not a Python module "
            f"defining `{entry_point}`{mentioned}: put the candidate in "
            "one ```python block",
            notes=notes,
        )
    notes.append("the answer has no fence; the whole answer is Python and was taken")
    return Extraction(answer.strip("\n") + "\n", None, None, 0, notes)


def _from_blocks(
    blocks: list[Block], entry_point: str, multiple: str, notes: list[str]
) -> Extraction:
    count = len(blocks)
    defining: list[Block] = []
    for block in blocks:
        if not block.is_python:
            if _mentions(block.code, entry_point):
                notes.append(
                    f"block {block.index} (```{block.language}) mentions "
                    f"`{entry_point}` but is not Python and was not taken"
                )
            continue
        if not block.closed:
            if _mentions(block.code, entry_point) or not defining:
                return Extraction(
                    None,
                    f"code block {block.index} is not closed: the "
                    "completion was cut off (e.g. at the token limit) "
                    "before its closing fence",
                    blocks=count,
                    notes=notes,
                )
            notes.append(f"block {block.index} is not closed (cut off) and was not taken")
            continue
        tree, error = _parse(block.code)
        if tree is None:
            if _mentions(block.code, entry_point):
                return Extraction(
                    None,
                    f"code block {block.index} defines `{entry_point}` "
                    f"but is not valid Python ({error})",
                    blocks=count,
                    notes=notes,
                )
            notes.append(f"block {block.index} is not valid Python ({error}) and was not taken")
            continue
        if _defines(tree, entry_point):
            defining.append(block)
        else:
            notes.append(
                f"block {block.index} does not define `{entry_point}` and was not "
                "taken (only the block defining it is the candidate)"
            )
    if not defining:
        return Extraction(
            None,
            f"no Python code block defines `{entry_point}` at module level "
            f"({count} fenced block(s) seen)",
            blocks=count,
            notes=notes,
        )
    distinct = list({block.code: block for block in defining}.values())
    if len(distinct) > 1 and multiple != "last":
        where = ", ".join(str(b.index) for b in defining)
        return Extraction(
            None,
            f"ambiguous: {len(distinct)} different code blocks ({where}) "
            f"define `{entry_point}`; answer with exactly one",
            blocks=count,
            notes=notes,
        )
    chosen = defining[-1]
    if len(distinct) > 1:
        notes.append(
            f"{len(distinct)} different blocks define `{entry_point}`; the last "
            f"(block {chosen.index}) was taken"
        )
    return Extraction(chosen.code, None, chosen.index, count, notes)
