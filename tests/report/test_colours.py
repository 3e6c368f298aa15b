"""One verdict colour table serves every terminal view."""

from rich.console import Console

from kernelproof.report.colours import VERDICT_COLOUR, verdict_banner_style, verdict_markup
from kernelproof.schema import Verdict


def test_every_verdict_has_one_colour_used_by_banner_and_tables():
    assert set(VERDICT_COLOUR) == set(Verdict)
    for verdict, colour in VERDICT_COLOUR.items():
        assert verdict_banner_style(verdict).endswith(f" on {colour}")
        assert verdict_markup(verdict) == f"[{colour}]{verdict.value}[/{colour}]"
        assert verdict_markup(verdict.value) == verdict_markup(verdict)


def test_a_missing_or_unknown_stored_verdict_is_shown_not_dropped():
    assert verdict_markup(None) == "-"
    console = Console(record=True, width=40)
    console.print(verdict_markup("[odd]"))
    assert console.export_text().strip() == "[odd]"
