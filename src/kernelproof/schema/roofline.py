"""Speed of light in a report: the floor time every algorithm is bound by, and each side's share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Ceilings(BaseModel):
    """Peak throughput of the device the numbers are measured on."""

    peak_flops: float
    """Peak floating-point operations per second."""

    peak_bytes_per_s: float
    """Peak memory bandwidth in bytes per second."""

    source: str
    """A device-table entry (with its citation) or ``calibration:<fingerprint>``."""


class SolFraction(BaseModel):
    """Floor time over each side's median time: 1.0 is the speed of light."""

    reference: float | None = None
    """Floor time over the reference's median (1.0 is the speed of light)."""

    candidate: float | None = None
    """Floor time over the candidate's median."""


class Roofline(BaseModel):
    """Speed-of-light analysis at the default shape."""

    flops: float
    """Floating-point operations of one reference call at the default shape."""

    bytes: float
    """Compulsory bytes that bind every algorithm: outputs written once, and the inputs every
    correct algorithm must read (those the reference consumes densely; a gathered table is
    not one), read once."""

    floor_s: float
    """The speed-of-light time: the compulsory bytes at the best bandwidth. A cold time below
    it (with a margin) is ``suspect``."""

    sol_fraction: SolFraction
    """How close each side gets to the floor."""

    ceilings: Ceilings
    """The device ceilings the floor is computed from."""

    bound: Literal["memory", "compute"] = "memory"
    """Which term sets the reference algorithm's floor: its FLOPs at peak (``compute``) or its
    bytes at bandwidth (``memory``)."""

    reference_algorithm: ReferenceAlgorithm | None = None
    """The same analysis against the reference's algorithm (its FLOPs, all of its inputs read):
    information only, never a reason for suspicion."""


class ReferenceAlgorithm(BaseModel):
    """Speed of light against the reference's own algorithm: its FLOPs at peak and all of its
    inputs read once. Information only: another algorithm may honestly do less work."""

    label: str = "against the reference's algorithm"
    """Says what these figures are measured against, for any reader of the JSON."""

    flops: float
    """FLOPs of one reference call."""

    bytes: float
    """Every input and parameter read once, every output written once."""

    floor_s: float
    """The larger of the FLOPs at peak and the bytes at bandwidth."""

    sol_fraction: SolFraction
    """Each side's time against that floor; above 1.0 means less work than the reference."""
