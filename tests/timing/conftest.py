"""Helpers shared by the timing tests."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

MS = 1e-3


@pytest.fixture
def lognormal() -> Callable[..., np.ndarray]:
    """Per-call times with a realistic multiplicative spread around ``median_s``."""

    def draw(seed: int, n: int, median_s: float = MS, sigma: float = 0.02) -> np.ndarray:
        return np.random.default_rng(seed).lognormal(math.log(median_s), sigma, n)

    return draw
