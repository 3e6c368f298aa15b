"""The terminal colour of each verdict: one table for the banner, the leaderboard, history and
compare, so that ``suspect`` reads the same everywhere."""

from __future__ import annotations

from rich.markup import escape

from kernelproof.schema import Verdict

#: One colour per verdict. Yellow for ``suspect`` (look again), red for ``incorrect`` (a silent
#: wrong answer), magenta for ``broken`` (did not run), blue for ``error`` (the task's fault).
VERDICT_COLOUR: dict[Verdict, str] = {
    Verdict.VERIFIED: "green",
    Verdict.INCORRECT: "red",
    Verdict.SUSPECT: "yellow",
    Verdict.BROKEN: "magenta",
    Verdict.ERROR: "blue",
}


def verdict_banner_style(verdict: Verdict) -> str:
    """The style of the report's verdict banner: bold text on the verdict's colour."""
    text = "black" if verdict is Verdict.SUSPECT else "white"  # white on yellow is unreadable
    return f"bold {text} on {VERDICT_COLOUR[verdict]}"


def verdict_markup(verdict: Verdict | str | None) -> str:
    """The verdict as rich markup in its colour; ``-`` when there is none. A stored verdict
    string that names no verdict is shown plainly (escaped), never dropped."""
    if verdict is None:
        return "-"
    try:
        known = Verdict(verdict)
    except ValueError:
        return escape(str(verdict))
    colour = VERDICT_COLOUR[known]
    return f"[{colour}]{known.value}[/{colour}]"
