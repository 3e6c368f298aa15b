"""Fitting a task's default shape to this machine's memory and time budget."""

from __future__ import annotations

from dataclasses import dataclass

from kernelproof.config import Settings
from kernelproof.controller.workers import WorkerPair

#: Halvings tried before giving up on fitting a task into the budget.
MAX_HALVINGS = 64


@dataclass(frozen=True)
class Sizing:
    knobs: dict[str, int]
    scaled_down: str | None = None
    """Why and how the knobs were scaled down, when they were."""

    warning: str | None = None
    """Why the task could not be sized (it then runs at its own knobs)."""


def fit_default_shape(pair: WorkerPair, knobs: dict[str, int], settings: Settings) -> Sizing:
    """Halve the largest knob until one call's estimated bytes and FLOPs fit the budget."""
    estimate = _estimate(pair, knobs)
    if estimate is None:
        return Sizing(knobs, warning="the task could not be sized on the meta device; it runs "
                                     "at its own knobs")
    if _fits(estimate, settings):
        return Sizing(knobs)
    needed = _describe(estimate)
    original, current = dict(knobs), dict(knobs)
    for _ in range(MAX_HALVINGS):
        name = max(current, key=lambda k: current[k], default=None)
        if name is None or current[name] <= 1:
            break
        current[name] = max(1, current[name] // 2)
        estimate = _estimate(pair, current) or estimate
        if _fits(estimate, settings):
            break
    changed = ", ".join(f"{k} {original[k]}->{v}" for k, v in current.items() if v != original[k])
    return Sizing(
        current,
        scaled_down=(
            f"the task's default shape needs ~{needed} per call, over this machine's budget "
            f"({settings.max_call_bytes / 2**20:.0f} MiB, {settings.max_call_flops / 1e9:.1f} "
            f"GFLOP); knobs scaled down: {changed}"
        ),
    )


def _estimate(pair: WorkerPair, knobs: dict[str, int]) -> dict[str, float] | None:
    response = pair.ask_reference({"op": "plan", "phase": "prepare", "knobs": knobs})
    if not response.ok or not response.reply.data.get("ok"):  # type: ignore[union-attr]
        return None
    return response.reply.data  # type: ignore[union-attr]


def _fits(estimate: dict[str, float], settings: Settings) -> bool:
    return (estimate["bytes"] <= settings.max_call_bytes
            and estimate["flops"] <= settings.max_call_flops)


def _describe(estimate: dict[str, float]) -> str:
    text = f"{estimate['bytes'] / 2**20:.0f} MiB"
    return text + (f" and {estimate['flops'] / 1e9:.1f} GFLOP" if estimate["flops"] else "")


def within_budget(pair: WorkerPair, knobs: dict[str, int], settings: Settings) -> bool:
    """Whether a (grown) shape variant fits the budget; unknown sizes count as fitting."""
    estimate = _estimate(pair, knobs)
    return estimate is None or _fits(estimate, settings)
