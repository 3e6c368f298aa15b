"""The command that reruns a whole verification, rebuilt from a report's recorded settings.

A report records the *resolved* settings (defaults < profile < task hints < flags), not the
flags that produced them. This module turns them back into the shortest ``kernelproof verify``
command that resolves to the same values: it picks the named profile that explains most of
them, adds one flag per remaining difference, and names the settings no flag can express.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from kernelproof.cli_options import flag_words
from kernelproof.config import PROFILES, Settings
from kernelproof.schema import Report

#: Recorded keys that are not inputs of a run: the seed is written from the correctness
#: section, and ``build_s`` is a measurement the controller stores beside the settings.
_NOT_SETTINGS = {"base_seed", "build_s"}


@dataclass(frozen=True)
class VerifyCommand:
    """A ``kernelproof verify`` command line and what it cannot carry."""

    words: list[str]
    unexpressed: dict[str, Any] = field(default_factory=dict)
    """Non-default settings with no command-line flag (a task ``POLICY`` or the API set them)."""

    @property
    def text(self) -> str:
        return shlex.join(self.words)


def verify_command(report: Report) -> VerifyCommand:
    """The command that reproduces ``report``'s whole verification: same files, same base seed,
    same non-default settings."""
    reference = report.reference.path if report.reference else "REFERENCE"
    candidate = report.candidate.path if report.candidate else "CANDIDATE"
    return settings_command(reference, candidate, _base_seed(report), report.settings)


def settings_command(
    reference: str, candidate: str, base_seed: int | None, settings: dict[str, Any]
) -> VerifyCommand:
    """The command that runs ``candidate`` against ``reference`` under recorded ``settings``
    (a ``Settings`` dump) and base seed; the seed fixes the weights and every draw."""
    words = ["kernelproof", "verify", reference, candidate]
    if base_seed is not None:
        words += ["--seed", str(base_seed)]
    recorded = {
        k: v for k, v in settings.items() if k in Settings.model_fields and k not in _NOT_SETTINGS
    }
    profile, flags, unexpressed = _closest_profile(recorded)
    if profile != "default":
        words += ["--profile", profile]
    return VerifyCommand(words=words + flags, unexpressed=unexpressed)


def _base_seed(report: Report) -> int | None:
    if report.correctness is not None:
        return report.correctness.base_seed
    seed = report.settings.get("base_seed")
    return seed if isinstance(seed, int) else None


def _closest_profile(recorded: dict[str, Any]) -> tuple[str, list[str], dict[str, Any]]:
    """The profile that leaves the fewest settings no flag can express; with its flags and its
    unexpressed settings. A profile is named only when it expresses something flags cannot,
    so the command spells out every setting it can."""
    best: tuple[tuple[int, bool, int], str, list[str], dict[str, Any]] | None = None
    for name in ["default", *sorted(p for p in PROFILES if p != "default")]:
        baseline = Settings(**PROFILES[name]).model_dump(mode="json")
        flags: list[str] = []
        unexpressed: dict[str, Any] = {}
        for key, value in recorded.items():
            if baseline.get(key) == value:
                continue
            words = flag_words(key, value) or []
            if words:
                flags += words
            else:
                unexpressed[key] = value
        score = (len(unexpressed), name != "default", len(flags))
        if best is None or score < best[0]:
            best = (score, name, flags, unexpressed)
    assert best is not None
    return best[1], best[2], best[3]
