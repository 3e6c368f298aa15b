"""One exception root for kernelproof. User errors also subclass ValueError or TypeError."""

from __future__ import annotations


class KernelproofError(Exception):
    """Root of every error kernelproof raises on purpose."""


class TaskError(KernelproofError, ValueError):
    """The task (reference) file is unusable. The message names the file and the fix."""


class UsageError(KernelproofError, ValueError):
    """The command line or API call is inconsistent. The message names the argument and the fix."""
