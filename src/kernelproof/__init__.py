"""kernelproof: verify and benchmark AI-written kernels against a trusted PyTorch reference.

``verify(reference_path, candidate_path, **settings)`` and ``evaluate(reference_src,
candidate_src, **settings)`` return a :class:`kernelproof.schema.Report`; a :class:`Session`
verifies many candidates with the task-only work done once; ``guard(candidate, reference,
report)`` serves a verified candidate behind a rollback guard. Importing this package does not
import torch (the schema and the store stay cheap to load).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelproof.dispatch import GuardedModule
    from kernelproof.schema import Report
    from kernelproof.session import Session

__all__ = ["Session", "evaluate", "guard", "verify"]

__version__ = "0.1.0"


def verify(reference: Any, candidate: Any, **settings: Any) -> Report:
    """Verify a candidate file against a reference file. See ``kernelproof.controller.verify``."""
    from kernelproof.controller.verify import verify as run

    return run(reference, candidate, **settings)


def evaluate(reference_src: str, candidate_src: str, **settings: Any) -> Report:
    """Verify a candidate given as source text. See :func:`kernelproof.api.evaluate`."""
    from kernelproof.api import evaluate as run

    return run(reference_src, candidate_src, **settings)


def guard(candidate: Any, reference: Any, report: Any, **options: Any) -> GuardedModule:
    """Serve a verified candidate inside its report's envelope, spot-checked against the
    reference, rolled back on the first mismatch. See :func:`kernelproof.dispatch.guard`."""
    from kernelproof.dispatch import guard as wrap

    return wrap(candidate, reference, report, **options)


def __getattr__(name: str) -> Any:
    # Loaded on first use: the CLI's start (a client of the warm verifier, say) does not need
    # the session and the worker machinery it imports (about 50 ms of the command's start).
    if name == "Session":
        from kernelproof.session import Session

        return Session
    raise AttributeError(f"module 'kernelproof' has no attribute {name!r}")
