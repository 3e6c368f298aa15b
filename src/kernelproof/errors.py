"""One exception root for kernelproof. User errors also subclass ValueError or TypeError."""

from __future__ import annotations


class KernelproofError(Exception):
    """Root of every error kernelproof raises on purpose."""


class TaskError(KernelproofError, ValueError):
    """The task (reference) file is unusable. The message names the file and the fix."""


class CandidateFormatError(KernelproofError, ValueError):
    """The candidate file is missing, unparsable or lacks its entry point (``ModelNew``).

    Not a :class:`TaskError`: the candidate is at fault, so the verdict is ``broken``, never the
    ``error`` a bad task gets. Catch it before, or apart from, ``TaskError``."""


class UsageError(KernelproofError, ValueError):
    """The command line or API call is inconsistent. The message names the argument and the fix."""
