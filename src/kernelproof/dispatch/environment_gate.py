"""The guard's start-up check: is this serving process the environment the report was proved in?

The current side is read here, once, when the guard is built: this process's packages,
compiler, CPU (or GPU), its intra-op thread count, and the candidate's source, hashed from the
file that defines the class of the module (or one of its submodules) it was given. What the
guard cannot know (which task file the production reference came from, the settings a matrix
would use) is left unknown: the rule (:mod:`kernelproof.schema.environment_rule`) then says
``unchecked``, never ``invalidates``.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from kernelproof.proof.probe import current_environment
from kernelproof.schema.binding import environment_fingerprint, report_fingerprint
from kernelproof.schema.environment_rule import EnvironmentDiff, diff_fingerprints
from kernelproof.schema.fingerprint import EnvironmentFingerprint
from kernelproof.schema.report import Report

__all__ = ["EnvironmentGate", "check_environment", "source_hash"]


@dataclass(frozen=True)
class EnvironmentGate:
    """The proved environment against this process's, and what the guard concludes."""

    proved: EnvironmentFingerprint
    current: EnvironmentFingerprint
    diff: EnvironmentDiff
    candidate_source: str
    """The file whose hash stood for the candidate, or why none could be read."""

    @property
    def blocked(self) -> bool:
        """Whether the candidate must not serve here (an invalidating difference)."""
        return self.diff.invalidated


def check_environment(
    report: Report, candidate: torch.nn.Module, candidate_source: str | Path | None = None
) -> EnvironmentGate:
    """Compare the report's environment with this process's. ``candidate_source`` names the
    file the candidate was built from when it cannot be found from its class."""
    proved = report_fingerprint(report)
    expected = report.candidate.sha256 if report.candidate else None
    digest, source = _candidate_digest(candidate, candidate_source, expected)
    device = report.environment.device
    # CPU threads run a CPU kernel only: on CUDA the matrix records none, and so does this.
    environment = current_environment(
        device,
        timing_threads=None,
        matrix_threads=torch.get_num_threads() if device == "cpu" else None,
    )
    current = environment_fingerprint(
        environment, candidate_sha256=digest, languages=proved.languages
    )
    current = current.with_components(timing_threads=None)  # the guard does not time
    diff = diff_fingerprints(proved, current)
    envelope = report.envelope.environment if report.envelope is not None else None
    if envelope is not None and not diff.invalidated:
        # The envelope's own copy: a report edited in one place and not the other is judged
        # by the stricter of the two.
        copy_diff = diff_fingerprints(
            envelope.model_copy(update={"languages": proved.languages}), current
        )
        if copy_diff.invalidated:
            diff = copy_diff
    return EnvironmentGate(proved=proved, current=current, diff=diff, candidate_source=source)


def source_hash(path: str | Path) -> str | None:
    """The hash ``verify`` records for a source file (of its text), or None when unreadable."""
    try:
        return hashlib.sha256(Path(path).read_text(encoding="utf-8").encode()).hexdigest()
    except (OSError, UnicodeDecodeError):
        return None


def _candidate_digest(
    candidate: torch.nn.Module, given: str | Path | None, expected: str | None
) -> tuple[str, str]:
    """The candidate's source hash and the file it came from. Without ``given``, the files
    that define the classes of the module and its submodules are tried: the proved hash found
    among them matches (a wrapper around the verified module still serves)."""
    if given is not None:
        digest = source_hash(given)
        return (digest or f"unreadable: {given}"), str(given)
    files = _defining_files(candidate)
    for path in files:
        if expected is not None and source_hash(path) == expected:
            return expected, str(path)
    if not files:
        name = type(candidate).__name__
        return (
            f"no source file: {name} was not defined in a file",
            f"none ({name} was defined outside a file: pass candidate_source=)",
        )
    first = files[0]
    return source_hash(first) or f"unreadable: {first}", str(first)


def _class_file(cls: type) -> str | None:
    """The file a class was defined in: its module's, or (for a module executed from a file
    without being registered, as ``verify``'s task loader does) its methods' code's."""
    path = getattr(sys.modules.get(cls.__module__), "__file__", None)
    if path:
        return str(path)
    for value in vars(cls).values():
        code = getattr(getattr(value, "__func__", value), "__code__", None)
        if code is not None and not code.co_filename.startswith("<"):
            return str(code.co_filename)
    return None


def _defining_files(candidate: torch.nn.Module) -> list[Path]:
    """The source files of the classes of ``candidate`` and its submodules, outside torch."""
    torch_root = Path(torch.__file__).resolve().parent
    files: list[Path] = []
    for module in candidate.modules():
        path = _class_file(type(module))
        if not path:
            continue
        resolved = Path(path).resolve()
        if torch_root in resolved.parents or resolved in files:
            continue
        files.append(resolved)
    return files
