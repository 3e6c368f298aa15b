"""One resolved configuration for a server: what ``kernelproof serve`` parsed, validated once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from kernelproof.serve.limits import Limits

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "SERVE_RUN_SOLUTIONS", "ServeConfig"]

#: The ``solutions`` of the run a server records in the store: what tells a server's
#: verifications from a bench run's.
SERVE_RUN_SOLUTIONS = "submissions (kernelproof serve)"

#: Loopback: only this machine's users can submit until the operator chooses otherwise.
DEFAULT_HOST = "127.0.0.1"

#: The port in DESIGN.md's command line.
DEFAULT_PORT = 8600


class ServeConfig(BaseModel):
    """Everything one server needs."""

    suite: Path
    """The suite whose tasks submissions may target."""

    db_url: str
    """The results store's SQLAlchemy URL (SQLite file or PostgreSQL)."""

    tokens: Path
    """The tokens file (``kernelproof token create``)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    workers: int = Field(default=1, ge=0)
    """Workers draining the queue; 0 runs none (another server's workers drain it)."""

    ray: str | None = None
    """None: local worker processes. ``"local"``: a local Ray cluster. Otherwise its address."""

    profile: str = "default"
    overrides: dict[str, Any] = Field(default_factory=dict)
    """Verification settings above the profile, as ``verify``'s keyword arguments."""

    limits: Limits = Field(default_factory=Limits)
    private_code: bool = False
    """Hide the review packet's code section (and the JSON report) from everyone but the
    submitting token."""
