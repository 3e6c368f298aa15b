"""The environment a report was produced in: device, versions, machine fingerprint."""

from __future__ import annotations

import importlib.metadata
import platform

from kernelproof.schema import Environment

#: Packages whose versions change results or timings, reported when installed.
REPORTED_PACKAGES = ("torch", "numpy", "numba", "triton", "pydantic")


def collect_environment(device: str, threads: int | None) -> Environment:
    import torch

    versions = {"python": platform.python_version(), "kernelproof": _version("kernelproof")}
    for package in REPORTED_PACKAGES:
        version = _version(package)
        if version:
            versions[package] = version
    if device == "cuda" and torch.cuda.is_available():
        device_name = torch.cuda.get_device_name()
        versions["cuda"] = str(torch.version.cuda)
    else:
        device_name = platform.processor() or platform.machine()
    return Environment(
        device=device,
        device_name=device_name,
        versions=versions,
        fingerprint=_fingerprint(device),
        threads=threads if threads is not None else torch.get_num_threads(),
    )


def _fingerprint(device: str) -> str:
    try:
        from kernelproof.roofline.fingerprint import machine_fingerprint
    except ImportError:
        return ""
    return machine_fingerprint(device)


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
