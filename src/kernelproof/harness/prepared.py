"""The model built by the last ``prepare`` request, with what the calls on it need."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Prepared"]


@dataclass
class Prepared:
    """The model built by the last ``prepare``, with what the calls on it need."""

    knobs: dict[str, int]
    task: types.ModuleType
    model: Any
    oracle: Any = None
    dtype: Any = None
    warmed: bool = False
    compiled: Any = None
    graph: Any = None
    output_bytes: int = 0
    """Bytes of one timed call's outputs, from the last batch (0 before the first)."""
    pools: dict[str, Any] = field(default_factory=dict)
    """Timed input pools by name (a baseline's, and the settle calls'), reset by prepare."""
