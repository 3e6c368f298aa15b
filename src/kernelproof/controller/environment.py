"""The environment a report was produced in: device, versions, machine and the whole environment
fingerprint its verdict is bound to (:mod:`kernelproof.proof.probe` reads it)."""

from __future__ import annotations

from kernelproof.proof.probe import REPORTED_PACKAGES, current_environment
from kernelproof.schema import Environment

__all__ = ["REPORTED_PACKAGES", "collect_environment"]


def collect_environment(
    device: str, threads: int | None, matrix_threads: int | None = None
) -> Environment:
    """This machine's environment for a run on ``device``: ``threads`` is the timing's thread
    count, ``matrix_threads`` the correctness matrix's (``None``: unknown, as for a run that
    stopped before its matrix)."""
    return current_environment(device, timing_threads=threads, matrix_threads=matrix_threads)
