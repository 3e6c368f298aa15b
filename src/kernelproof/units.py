"""How a duration reads, in every layer: a timing note, the terminal, the packet.

One function, so that a noise warning written during timing and the report's tables never
disagree about the same number ("us" against "µs" did).
"""

from __future__ import annotations

import math

#: Time units from the largest down, with the factor that turns seconds into each.
TIME_UNITS = (("s", 1.0), ("ms", 1e3), ("\u00b5s", 1e6), ("ns", 1e9))


def seconds(value: float | None) -> str:
    """A duration in the largest unit that keeps it at or above 1, to three significant
    figures: ``1.23 ms``, ``870 ns``. The value is rounded first, so 0.9999 ms reads ``1 ms``,
    not ``1e+03 µs``. ``n/a`` for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    value = float(f"{value:.3g}")
    if value == 0:
        return "0 s"
    for unit, factor in TIME_UNITS:
        if abs(value) * factor >= 1:
            return f"{value * factor:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"
