"""The environment fingerprint a verdict is bound to: everything that could make it untrue.

A verdict says what held with one torch, one compiler, one instruction set, one thread count,
for one candidate's bytes against one task's. The fingerprint names each of those parts as a
*component* (a short name and a plain-text value) so that two environments can be compared part
by part; which differences invalidate a verdict and which only annotate it is decided in one
place, :mod:`kernelproof.schema.environment_rule`.

The components are derived from the report (``environment``, ``candidate``, ``reference``,
``settings``, ``code``) by :func:`kernelproof.schema.binding.report_fingerprint`, never stored a
second time beside them: a report whose ``environment.versions.torch`` was edited *is* a report
from another torch. Pure pydantic, no torch.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

#: Written into ``environment.fingerprint_schema`` by the kernelproof that records every component
#: below; a report without it is of the older format (its verdict cannot be bound: it is
#: re-verified by ``kernelproof recheck`` and refused by the guard).
FINGERPRINT_SCHEMA: Final = "kernelproof.fingerprint/1"

#: Hex digits kept of a fingerprint's digest: 64 bits tell any two environments of one team
#: apart and stay short enough for a file name (``report.recheck-<digest>.json``).
DIGEST_HEX_DIGITS = 16


class GpuFacts(BaseModel):
    """The GPU a CUDA verdict was proved on."""

    model_config = ConfigDict(frozen=True)

    name: str = ""
    """``torch.cuda.get_device_name()``."""

    capability: str = ""
    """Compute capability, ``major.minor`` (``9.0`` for an H100)."""

    driver: str = ""
    """The NVIDIA driver version (``nvidia-smi``), empty when it could not be read."""

    count: int = 0
    """GPUs visible to the process."""


class EnvironmentFingerprint(BaseModel):
    """One environment, part by part. A component that is absent is unknown: not recorded when
    the verdict was proved (an older report), or not checkable where it is read (the guard
    cannot know the task file a production reference came from)."""

    model_config = ConfigDict(frozen=True)

    components: dict[str, str] = Field(default_factory=dict)
    """Component name -> value as text (``torch`` -> ``2.13.0+cpu``, ``isa`` -> ``avx avx2
    fma ...``). The names are those of :data:`kernelproof.schema.environment_rule.RULES`."""

    languages: list[str] | None = None
    """The candidate's kernel languages (``numba``, ``triton``, ``cpp``...), which decide whether
    a toolchain change touches it; ``None`` when unknown (then every toolchain counts)."""

    matrix_settings: dict[str, Any] = Field(default_factory=dict)
    """The settings that shaped the correctness matrix and its judgement, as recorded; the
    ``matrix_settings`` component is their digest, these are shown when it differs."""

    recorded: bool = True
    """False for a report of the older format (no ``environment.fingerprint_schema``)."""

    def digest(self, names: list[str] | None = None) -> str:
        """A short hash of the components (of ``names`` only, when given), stable across
        processes: equal digests mean equal values for every named component."""
        chosen = {k: v for k, v in sorted(self.components.items()) if names is None or k in names}
        text = json.dumps(chosen, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_HEX_DIGITS]

    def with_components(self, **values: str | None) -> EnvironmentFingerprint:
        """A copy with these components set (``None`` removes one: unknown)."""
        components = dict(self.components)
        for name, value in values.items():
            if value is None:
                components.pop(name, None)
            else:
                components[name] = value
        return self.model_copy(update={"components": components})


def settings_digest(settings: dict[str, Any]) -> str:
    """The digest of a settings mapping (sorted keys, compact JSON)."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_HEX_DIGITS]
