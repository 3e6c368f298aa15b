"""The verified-dispatch guard: ship a verified kernel with a rollback plan.

:func:`guard` wraps a candidate module and its reference; see :mod:`kernelproof.dispatch.guarded`
and ``docs/shipping.md``. (The package is not named ``guard`` so that ``kernelproof.guard``
stays the function.)
"""

from kernelproof.dispatch.guarded import (
    ENVIRONMENT_POLICIES,
    MISMATCH_POLICIES,
    CandidateMismatch,
    EnvironmentMismatchWarning,
    GuardedModule,
    GuardError,
    guard,
)

__all__ = [
    "ENVIRONMENT_POLICIES",
    "MISMATCH_POLICIES",
    "CandidateMismatch",
    "EnvironmentMismatchWarning",
    "GuardError",
    "GuardedModule",
    "guard",
]
