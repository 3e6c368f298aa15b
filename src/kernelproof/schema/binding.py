"""A verdict's environment fingerprint, read from its report (or from this machine plus a
verdict's sources), in the components :mod:`kernelproof.schema.environment_rule` judges.

Each component has one home in the report (``environment``, the ``candidate`` and ``reference``
hashes, ``settings``, ``code.languages``) and is read from there every time, so an edited report
means what it says. Pure: no torch, no I/O.
"""

from __future__ import annotations

from typing import Any

from kernelproof.schema.fingerprint import EnvironmentFingerprint, settings_digest
from kernelproof.schema.report import Environment, Report

__all__ = [
    "MATRIX_SETTINGS",
    "VERSION_COMPONENTS",
    "environment_fingerprint",
    "matrix_settings",
    "report_fingerprint",
]

#: The settings that shape the correctness matrix and how it judges (``matrix_settings``).
#: Timing, budgets, limits and where outputs go are left out: they change no verdict's meaning.
#: An allow-list, so that a setting added in a later kernelproof does not unbind every older
#: verdict. ``threads`` is a component of its own.
MATRIX_SETTINGS: tuple[str, ...] = (
    "device",
    "dtype",
    "seeds",
    "input_seeds",
    "default_knobs",
    "inputs_file",
    "shape_variants",
    "generated_shapes",
    "value_variants",
    "layout_variants",
    "stress_shapes",
    "allow_torch",
    "strict",
    "atol",
    "rtol",
    "tolerance_factor",
    "max_call_bytes",
    "max_call_flops",
    "sandbox",
    "insecure_sandbox",
    "integrity_probes",
    "mode",
)

#: ``environment.versions`` keys that are components of the same name.
VERSION_COMPONENTS: tuple[str, ...] = (
    "kernelproof",
    "python",
    "torch",
    "numpy",
    "numba",
    "llvmlite",
    "triton",
    "pydantic",
    "compiler",
    "nvcc",
    "cuda",
)


def matrix_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """The recorded settings that shape the matrix (see :data:`MATRIX_SETTINGS`)."""
    return {key: settings[key] for key in MATRIX_SETTINGS if key in settings}


def report_fingerprint(report: Report) -> EnvironmentFingerprint:
    """The environment ``report``'s verdict is bound to."""
    return environment_fingerprint(
        report.environment,
        candidate_sha256=report.candidate.sha256 if report.candidate else None,
        task_sha256=report.reference.sha256 if report.reference else None,
        settings=report.settings,
        languages=report.code.languages if report.code else None,
    )


def environment_fingerprint(
    environment: Environment,
    *,
    candidate_sha256: str | None = None,
    task_sha256: str | None = None,
    settings: dict[str, Any] | None = None,
    languages: list[str] | None = None,
) -> EnvironmentFingerprint:
    """The fingerprint of ``environment`` for a verdict on these sources and settings; an
    argument left ``None`` leaves its component unknown."""
    components: dict[str, str] = {}
    for name in VERSION_COMPONENTS:
        value = environment.versions.get(name)
        if value:
            components[name] = value
    components["device"] = environment.device
    optional: dict[str, object] = {
        "candidate": candidate_sha256,
        "task": task_sha256,
        "arch": environment.arch,
        "cpu_model": environment.cpu_model,
        "isa": " ".join(environment.isa) if environment.isa is not None else None,
        "cpu_count": environment.cpu_count,
        "memory_gib": environment.memory_gib,
        "threads": environment.matrix_threads,
        "timing_threads": environment.threads,
    }
    if environment.gpu is not None:
        optional.update(
            gpu=environment.gpu.name,
            gpu_capability=environment.gpu.capability,
            driver=environment.gpu.driver,
            gpu_count=environment.gpu.count,
        )
    recorded = environment.fingerprint_schema is not None
    if not recorded:
        # Older reports wrote a timing thread count only, and a device_name that was the
        # architecture: neither means what the components do.
        optional.update(threads=None, timing_threads=None)
    for name, optional_value in optional.items():
        if optional_value is not None and optional_value != "":
            components[name] = str(optional_value)
    chosen = matrix_settings(settings or {})
    if chosen:
        components["matrix_settings"] = settings_digest(chosen)
    return EnvironmentFingerprint(
        components=components, languages=languages, matrix_settings=chosen, recorded=recorded
    )
