"""A speedup's confidence interval, and its "not measured" state in JSON.

A shape timed over too few rounds for a bootstrap has no interval. In Python that is the
unbounded interval ``(0.0, inf)``, which every comparison reads correctly (nothing is ruled out).
JSON has no infinity: pydantic wrote it as the string ``"Infinity"`` in a field typed as numbers,
which a consumer's validator (or an RL reward parser) rejects or misreads. So in JSON the
interval is either two finite numbers or ``null`` ("not measured"), as the published schema
(``kernelproof schema``) says, and ``null`` reads back as the unbounded interval. The store and
the server's API use the same rule through :func:`measured_interval`.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

#: What a consumer reads in the schema for an interval field.
INTERVAL_DESCRIPTION = (
    "Confidence interval [low, high] of a speedup, two finite numbers; null when it was not "
    "measured (too few timed rounds for a bootstrap)."
)


def measured_interval(interval: Any) -> tuple[float, float] | None:
    """``interval`` as two finite floats, or None when it is absent or not measured (a
    non-finite bound)."""
    if interval is None:
        return None
    low, high = (float(v) for v in interval)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return low, high


def _unbounded_when_null(value: Any) -> Any:
    return (0.0, math.inf) if value is None else value


def _null_when_unmeasured(value: tuple[float, float]) -> list[float] | None:
    measured = measured_interval(value)
    return list(measured) if measured is not None else None


SpeedupInterval = Annotated[
    tuple[float, float],
    BeforeValidator(_unbounded_when_null),
    PlainSerializer(_null_when_unmeasured, when_used="json"),
    WithJsonSchema(
        {
            "anyOf": [
                {
                    "type": "array",
                    "prefixItems": [{"type": "number"}, {"type": "number"}],
                    "minItems": 2,
                    "maxItems": 2,
                },
                {"type": "null"},
            ],
            "description": INTERVAL_DESCRIPTION,
        }
    ),
]
"""A speedup interval: ``(low, high)`` in Python (``(0.0, inf)`` when not measured), two
finite numbers or ``null`` in JSON."""
