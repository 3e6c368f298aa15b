"""Verdicts, severities and exit codes: the public contract of a verification."""

from __future__ import annotations

from enum import Enum, IntEnum


class Verdict(str, Enum):
    """The one-word answer of a verification. Each maps to one process exit code."""

    VERIFIED = "verified"
    """Correct on every tested variant, with no integrity finding at severity ``suspect``."""

    INCORRECT = "incorrect"
    """A silently wrong answer on some tested input that the reference handles."""

    SUSPECT = "suspect"
    """Outputs may match, but there is integrity evidence: tampering, passthrough, impossible time."""

    BROKEN = "broken"
    """The candidate did not build or run: compile error, crash, timeout, exit."""

    ERROR = "error"
    """The task or the command is at fault (bad reference, bad arguments)."""

    @property
    def exit_code(self) -> ExitCode:
        return ExitCode[self.name]


class ExitCode(IntEnum):
    """Process exit status of ``kernelproof verify``, one per verdict."""

    VERIFIED = 0
    INCORRECT = 1
    SUSPECT = 2
    BROKEN = 3
    ERROR = 4


class Severity(str, Enum):
    """How much a finding weighs on the verdict, from most to least severe."""

    FAIL = "fail"
    """A correctness failure: forces ``incorrect`` (or ``broken`` for a build/run failure)."""

    SUSPECT = "suspect"
    """Integrity evidence: forces ``suspect`` unless something worse already holds."""

    WARN = "warn"
    """A stated limitation or a risk a reviewer should read; does not change the verdict."""

    INFO = "info"
    """Context for the reviewer."""

    @property
    def rank(self) -> int:
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.FAIL: 3, Severity.SUSPECT: 2, Severity.WARN: 1, Severity.INFO: 0}
