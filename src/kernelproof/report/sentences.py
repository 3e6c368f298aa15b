"""Shortening a message into a headline that still reads as a sentence.

A reviewer reads the summary and the terminal's first line; an RL loop logs them. A headline
cut mid-word (``ATen_cuda li``), opened by an absolute path, or with its fix cut off (``rerun
with --devi``) is a line that is not exactly true. So:

- cuts fall at a sentence boundary, or else at a word boundary, and say so with an ellipsis;
- a leading path is shown by its file name (the findings and the report keep the full path);
- the fix a message ends with (``rerun with --device cuda ...``) is kept whole.

Pure string functions: no torch, no schema, used by the controller's summary and every view.
"""

from __future__ import annotations

import re

#: Marks where a headline was shortened.
ELLIPSIS = "..."

#: A cut at a sentence boundary is preferred when it keeps at least this share of the limit;
#: shorter than that, a word boundary keeps more of the story.
SENTENCE_SHARE = 0.5

#: A path opening a message (``/home/u/task/reference.py:12: ...``), with its line number.
_LEADING_PATH = re.compile(r"^(?:[A-Za-z]:)?[\\/][^\s:]*[\\/]([^\s:\\/]+)((?::\d+)*):\s*")

#: Verbs a fix opens with, in the imperative our messages use.
FIX_VERBS = (
    "rerun",
    "run",
    "fix",
    "use",
    "pass",
    "give",
    "set",
    "install",
    "declare",
    "define",
    "remove",
    "add",
    "make",
    "check",
    "try",
    "build",
    "call",
    "lower",
    "raise",
)

#: A fix clause: after a clause separator, an imperative verb, up to a sentence end or a
#: parenthesis (the quoted evidence that may follow the fix is not the fix; a short aside
#: such as ``(deadline_s)`` is part of it).
_FIX = re.compile(
    r"(?:^|[.;:]\s+|,\s+(?:or\s+)?)((?:%s)\b(?:[^.;()]|\([^()'\"]{0,24}\))*[^.;()\s])"
    % "|".join(FIX_VERBS),
    re.IGNORECASE,
)

#: A fix longer than this share of the limit is not kept apart: it would leave no room for
#: what happened.
FIX_SHARE = 0.6


#: An absolute path anywhere in a headline: shown by its file name there.
_PATH = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?[\\/](?:[^\s\\/:()'\"]+[\\/])+([^\s\\/:()'\"]+)")


def without_leading_path(text: str) -> str:
    """``text`` with a leading absolute path replaced by its file name."""
    match = _LEADING_PATH.match(text)
    if match is None:
        return text
    return f"{match.group(1)}{match.group(2)}: {text[match.end() :]}"


def without_paths(text: str) -> str:
    """``text`` with every absolute path replaced by its file name (a headline's view: the
    finding keeps the full path)."""
    return _PATH.sub(lambda m: m.group(1), without_leading_path(text))


def split_cases(text: str) -> list[str]:
    """``text`` split at ``", "`` outside parentheses: ``a (x, y), b`` is two cases."""
    cases, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and text.startswith(", ", i):
            cases.append(text[start:i])
            start = i + 2
    return cases + [text[start:]]


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters (plus an ellipsis) at a sentence or word
    boundary. A single word longer than the limit is kept whole rather than cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    window = text[: limit + 1]
    sentence_end = max(window.rfind(". "), window.rfind("; "))
    if sentence_end >= limit * SENTENCE_SHARE:
        return text[:sentence_end].rstrip(" ,;:(") + ELLIPSIS
    space = window.rfind(" ")
    if space <= 0:
        word = text.split(None, 1)[0]
        return word if word == text else word.rstrip(",;:(") + ELLIPSIS
    head = text[:space].rstrip(" ,;:(-")
    # A parenthesis or quote the cut leaves open is closed after the ellipsis, so the line
    # still parses as the reader expects: ``index (4, 17) where the...)``.
    closers = ")" * max(0, head.count("(") - head.count(")"))
    quote = "'" if _quotes(head, "'") % 2 else ""
    return head + ELLIPSIS + quote + closers


def fix_of(text: str) -> str | None:
    """The last fix clause in ``text`` (``rerun with --device cuda on a machine with a CUDA
    GPU``), or None."""
    found = [m for m in _FIX.finditer(text) if _outside_quotes(text[: m.start(1)])]
    return found[-1].group(1) if found else None


def _outside_quotes(before: str) -> bool:
    """Whether the text after ``before`` is outside any parenthesis or quote it opened: a
    fix quoted from torch's own message is torch's, not ours."""
    return (
        before.count("(") <= before.count(")")
        and _quotes(before, "'") % 2 == 0
        and _quotes(before, '"') % 2 == 0
    )


def _quotes(text: str, mark: str) -> int:
    """Quote marks in ``text``, not counting apostrophes inside words (``caller's``)."""
    return len(re.findall(r"(?<![A-Za-z])%s|%s(?![A-Za-z])" % (mark, mark), text))


def headline(message: str, limit: int) -> str:
    """``message`` as one readable line of at most about ``limit`` characters: paths shown
    by their file names, cut at a boundary, its fix kept whole; a list of cases becomes its first case."""
    text = without_paths(message.strip())
    if len(text) <= limit:
        return text
    fix = fix_of(text)
    if fix is not None and len(fix) <= limit * FIX_SHARE:
        start = text.rfind(fix)
        body = text[:start].rstrip(" ,;:.")
        if body:
            return f"{shorten(body, limit - len(fix) - 2)}: {fix}"
        return fix
    head, sep, rest = text.partition(": ")
    cases = split_cases(rest)
    if sep and len(cases) > 1 and ". " not in cases[0] and len(head) < limit * FIX_SHARE:
        first_case = shorten(cases[0], limit - len(head) - len(" (first: )"))
        return f"{head} (first: {first_case})"
    return shorten(text, limit)
