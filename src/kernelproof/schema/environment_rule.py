"""The invalidation rule: which differences between two environments void a verdict.

This is the one place the rule lives. ``kernelproof recheck`` re-verifies exactly the verdicts
it invalidates, the guard refuses to serve a candidate outside the environment it invalidates
nothing of, and ``kernelproof compare`` explains with it why a kernel verified on one machine
says nothing about another. ``docs/shipping.md`` ("What invalidates a verdict") shows the same
table; a test keeps the two in step.

Every component of an :class:`~kernelproof.schema.fingerprint.EnvironmentFingerprint` has a
:class:`ComponentRule`. A difference in a component has one of three effects:

- ``invalidates``: the verdict no longer says anything about this environment; re-verify.
- ``annotates``: a change worth showing (a patch release of a tool that does not compute, a
  faster CPU of the same instruction set), which leaves the verdict standing. Speedups are
  still not comparable across it: the timing changes with the machine.
- ``unchecked``: the component is unknown where the comparison is made (the guard cannot tell
  which task file a production reference came from).

A component the *proved* side did not record (an older report) while the current side has it
is treated as a change: an invalidating component that was never recorded cannot be shown to be
the same. Pure: no torch, no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from kernelproof.schema.fingerprint import EnvironmentFingerprint


class Policy(str, Enum):
    """When a difference in one component invalidates a verdict."""

    ANY_CHANGE = "any-change"
    """Any difference invalidates."""

    BEYOND_PATCH = "beyond-patch"
    """A different ``major.minor`` invalidates; a patch release (``2.4.5`` -> ``2.4.6``)
    annotates."""

    BEYOND_MAJOR = "beyond-major"
    """A different major version invalidates; anything else annotates."""

    THREADS = "threads"
    """Invalidates unless the current count is the proved one or 1 (the matrix runs at its
    thread count and repeats a sample at one thread)."""

    ANNOTATE = "annotate"
    """Never invalidates; a difference is shown."""


class Effect(str, Enum):
    """What one difference does to a verdict."""

    INVALIDATES = "invalidates"
    """The verdict says nothing about this environment: re-verify it."""

    ANNOTATES = "annotates"
    """Worth showing; the verdict stands (speed does not carry over)."""

    UNCHECKED = "unchecked"
    """Not knowable where the comparison is made."""


@dataclass(frozen=True)
class ComponentRule:
    """How one component is judged, and why."""

    policy: Policy
    """When a difference invalidates."""

    why: str
    """Why the component matters, in plain words (shown with each difference)."""

    languages: frozenset[str] | None = None
    """When set, the component invalidates only verdicts of candidates written in one of these
    languages (a numba upgrade cannot change a C++ kernel); for the others it annotates."""


#: The rule, component by component, in the order reports show them.
RULES: dict[str, ComponentRule] = {
    "candidate": ComponentRule(
        Policy.ANY_CHANGE, "the candidate's source (sha256): the code proved is not the code run"
    ),
    "task": ComponentRule(
        Policy.ANY_CHANGE,
        "the task's source (sha256): the reference, its inputs or its SHAPES changed",
    ),
    "device": ComponentRule(Policy.ANY_CHANGE, "cpu or cuda: another device runs other kernels"),
    "matrix_settings": ComponentRule(
        Policy.ANY_CHANGE,
        "the settings that shaped the correctness matrix and its tolerance: "
        "another matrix proves something else",
    ),
    "torch": ComponentRule(
        Policy.ANY_CHANGE,
        "every op, its dispatch, its numerics and the verifier's own probes "
        "come from torch (a build tag such as +cpu or +cu124 counts)",
    ),
    "python": ComponentRule(
        Policy.BEYOND_PATCH,
        "the interpreter: a minor release changes the bytecode and the "
        "C API extensions are built against",
    ),
    "numpy": ComponentRule(
        Policy.BEYOND_PATCH,
        "numba kernels and many candidates compute on numpy arrays; a "
        "patch release only fixes bugs",
    ),
    "numba": ComponentRule(
        Policy.ANY_CHANGE,
        "numba compiles the kernel: another numba emits other code",
        frozenset({"numba"}),
    ),
    "llvmlite": ComponentRule(
        Policy.ANY_CHANGE, "numba's LLVM: another one emits other code", frozenset({"numba"})
    ),
    "triton": ComponentRule(
        Policy.ANY_CHANGE,
        "Triton compiles the kernel (and torch.compile's GPU kernels)",
        frozenset({"triton", "torch.compile"}),
    ),
    "compiler": ComponentRule(
        Policy.ANY_CHANGE,
        "the C++ compiler builds the extension (and torch.compile's CPU kernels)",
        frozenset({"cpp", "cuda", "torch.compile"}),
    ),
    "nvcc": ComponentRule(
        Policy.ANY_CHANGE, "the CUDA compiler builds the extension's kernels", frozenset({"cuda"})
    ),
    "cuda": ComponentRule(Policy.ANY_CHANGE, "the CUDA runtime torch was built with"),
    "driver": ComponentRule(
        Policy.BEYOND_MAJOR, "the GPU driver: a new major branch JIT-compiles PTX differently"
    ),
    "arch": ComponentRule(Policy.ANY_CHANGE, "the machine architecture (x86_64, aarch64)"),
    "isa": ComponentRule(
        Policy.ANY_CHANGE,
        "the instruction-set extensions (AVX2, AVX-512, "
        "AMX, SVE...): libraries pick other code paths",
    ),
    "gpu": ComponentRule(Policy.ANY_CHANGE, "the GPU model"),
    "gpu_capability": ComponentRule(Policy.ANY_CHANGE, "the GPU's compute capability"),
    "threads": ComponentRule(
        Policy.THREADS,
        "the thread count the correctness matrix ran at: a race needs two threads to show",
    ),
    "kernelproof": ComponentRule(
        Policy.ANNOTATE,
        "the verifier: a newer one may check more (`kernelproof recheck --all` re-verifies)",
    ),
    "pydantic": ComponentRule(Policy.ANNOTATE, "the report's models: never in a computation"),
    "cpu_model": ComponentRule(
        Policy.ANNOTATE,
        "the CPU model: correctness rests on the instruction set, speed does not carry over",
    ),
    "cpu_count": ComponentRule(
        Policy.ANNOTATE, "cores: speed only (the matrix's own thread count is `threads`)"
    ),
    "memory_gib": ComponentRule(Policy.ANNOTATE, "memory: speed and the largest stress sizes only"),
    "timing_threads": ComponentRule(Policy.ANNOTATE, "threads the timing ran at: speed only"),
    "gpu_count": ComponentRule(Policy.ANNOTATE, "GPUs visible: speed and scheduling only"),
}

#: The components whose difference can invalidate: the part of a fingerprint a verdict is
#: bound to (its digest names a recheck's output file).
BINDING_COMPONENTS: list[str] = [
    name for name, rule in RULES.items() if rule.policy is not Policy.ANNOTATE
]

#: Components whose value is a space-separated set: a difference is shown as +added -removed.
SET_COMPONENTS = frozenset({"isa"})

_VERSION = re.compile(r"(\d+)(?:\.(\d+))?")


class ComponentChange(BaseModel):
    """One component that differs between the proved and the current environment."""

    model_config = ConfigDict(frozen=True)

    component: str
    """The component's name (a key of :data:`RULES`)."""

    proved: str | None
    """Its value where the verdict was proved (``None``: not recorded)."""

    current: str | None
    """Its value here (``None``: not checkable here)."""

    effect: Effect
    """What the difference does to the verdict."""

    reason: str
    """Why, in plain words."""

    def describe(self) -> str:
        """``torch 2.13.0+cpu -> 2.14.0+cpu (invalidates: ...)``."""
        if self.component in SET_COMPONENTS and self.proved and self.current:
            before, after = set(self.proved.split()), set(self.current.split())
            change = " ".join(
                [f"+{f}" for f in sorted(after - before)]
                + [f"-{f}" for f in sorted(before - after)]
            )
            return f"{self.component} {_short(change)} ({self.effect.value}: {self.reason})"
        proved = _short(self.proved) if self.proved is not None else "(not recorded)"
        current = _short(self.current) if self.current is not None else "(unknown here)"
        return f"{self.component} {proved} -> {current} ({self.effect.value}: {self.reason})"


class EnvironmentDiff(BaseModel):
    """Every component that differs between two environments, with its effect."""

    model_config = ConfigDict(frozen=True)

    changes: list[ComponentChange] = Field(default_factory=list)
    """In the order of :data:`RULES`, unknown component names last."""

    proved_recorded: bool = True
    """False when the proved side is a report of the older format (no fingerprint)."""

    @property
    def invalidating(self) -> list[ComponentChange]:
        return [c for c in self.changes if c.effect is Effect.INVALIDATES]

    @property
    def annotations(self) -> list[ComponentChange]:
        return [c for c in self.changes if c.effect is Effect.ANNOTATES]

    @property
    def invalidated(self) -> bool:
        """Whether the verdict no longer holds in the current environment."""
        return bool(self.invalidating)

    def describe(self, limit: int = 4) -> str:
        """One line: the invalidating changes first, then the annotations."""
        if not self.changes:
            return "same environment"
        head = (
            ""
            if self.proved_recorded
            else ("the report predates environment fingerprints (an older kernelproof); ")
        )
        shown = (self.invalidating + self.annotations)[:limit]
        rest = len(self.invalidating) + len(self.annotations) - len(shown)
        text = "; ".join(c.describe() for c in shown)
        return head + text + (f"; and {rest} more" if rest > 0 else "")


def diff_fingerprints(
    proved: EnvironmentFingerprint, current: EnvironmentFingerprint, *, everything: bool = False
) -> EnvironmentDiff:
    """The differences between the environment a verdict was proved in and the current one.

    ``everything``: annotating differences invalidate too (``kernelproof recheck --all``)."""
    names = list(RULES) + sorted((set(proved.components) | set(current.components)) - set(RULES))
    changes = []
    for name in names:
        before, after = proved.components.get(name), current.components.get(name)
        if before == after or (before is None and after is None):
            continue
        effect, reason = _judge(name, before, after, proved.languages)
        if everything and effect is Effect.ANNOTATES:
            effect, reason = Effect.INVALIDATES, f"{reason}; --all re-verifies every change"
        changes.append(
            ComponentChange(
                component=name, proved=before, current=after, effect=effect, reason=reason
            )
        )
    return EnvironmentDiff(changes=changes, proved_recorded=proved.recorded)


def _judge(
    name: str, before: str | None, after: str | None, languages: list[str] | None
) -> tuple[Effect, str]:
    rule = RULES.get(name)
    if rule is None:
        return Effect.ANNOTATES, "a component this kernelproof has no rule for"
    if after is None:
        return Effect.UNCHECKED, "not checkable here"
    if rule.policy is Policy.ANNOTATE:
        return Effect.ANNOTATES, rule.why
    if (
        rule.languages is not None
        and languages is not None
        and not (rule.languages & set(languages))
    ):
        return Effect.ANNOTATES, (
            f"{rule.why}; the candidate uses none of {', '.join(sorted(rule.languages))}"
        )
    if before is None:
        return Effect.INVALIDATES, f"not recorded when the verdict was proved; {rule.why}"
    if rule.policy is Policy.THREADS:
        if after in (before, "1"):
            return Effect.ANNOTATES, f"{rule.why}; {after} thread(s) were covered"
        return Effect.INVALIDATES, (
            f"{rule.why}; the matrix ran at {before} thread(s) (and a sample at 1), not at {after}"
        )
    if rule.policy is Policy.BEYOND_PATCH and _same_release(before, after, 2):
        return Effect.ANNOTATES, f"a patch release; {rule.why}"
    if rule.policy is Policy.BEYOND_MAJOR and _same_release(before, after, 1):
        return Effect.ANNOTATES, f"the same major version; {rule.why}"
    return Effect.INVALIDATES, rule.why


def _same_release(before: str, after: str, parts: int) -> bool:
    """Whether two versions agree in their first ``parts`` numbers (both must hold some)."""
    first, second = _release(before, parts), _release(after, parts)
    return first is not None and first == second


def _release(version: str, parts: int) -> tuple[str, ...] | None:
    """The first ``parts`` numbers of a version (``2.4.6`` -> ``("2", "4")``); None when the
    text holds no version (then only equal texts are the same release)."""
    match = _VERSION.search(version)
    if match is None:
        return None
    numbers = tuple(n for n in match.groups() if n is not None)
    return numbers[:parts] if len(numbers) >= parts else None


def _short(value: str, limit: int = 60) -> str:
    """Long values (a hash, a flag list) cut for one line; hashes to 12 digits."""
    if re.fullmatch(r"[0-9a-f]{40,}", value):
        return value[:12]
    return value if len(value) <= limit else value[: limit - 3] + "..."
