"""This process's environment: versions, toolchain, CPU, GPU and thread counts.

What ``verify`` records in a report (``controller/environment.py``), what ``recheck`` compares
stored verdicts against, and what the guard checks at start-up. Reading it costs a few tens of
milliseconds (package metadata, ``/proc/cpuinfo``, one ``c++ --version``), cached per process:
none of it changes while a process runs, except the thread count, which callers pass.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from kernelproof.roofline.fingerprint import cpu_model, machine_fingerprint
from kernelproof.schema.fingerprint import FINGERPRINT_SCHEMA, GpuFacts
from kernelproof.schema.report import Environment

__all__ = [
    "REPORTED_PACKAGES",
    "compiler_version",
    "cpu_facts",
    "current_environment",
    "isa_flags",
    "matrix_thread_count",
    "software_versions",
]

#: Packages whose versions change results or timings, reported when installed.
REPORTED_PACKAGES = ("torch", "numpy", "numba", "llvmlite", "triton", "pydantic")

#: x86 /proc/cpuinfo flags that select code paths in compilers and libraries (oneDNN, MKL,
#: numba's LLVM, inductor's C++): the vector and bit-manipulation extensions. The other flags
#: (virtualisation, power management, CPU bugs) differ between hosts of one instance type and
#: would invalidate verdicts for nothing.
X86_ISA_FLAG = re.compile(
    r"^(mmx|sse\d?|ssse3|sse4_[12]|sse4a|avx\w*|fma4?|f16c|amx\w*|bmi[12]|popcnt|lzcnt|abm|"
    r"movbe|adx|aes|vaes|pclmulqdq|vpclmulqdq|gfni|sha_ni)$"
)

#: How long a compiler gets to print its version before it is taken as absent.
COMPILER_TIMEOUT_S = 10.0

_CPUINFO = Path("/proc/cpuinfo")


def matrix_thread_count(device: str, threads: int | None) -> int | None:
    """The thread count the correctness matrix runs at for a ``--threads`` setting: that count,
    or on CPU every core (``None`` on CUDA, where CPU threads do not run the kernel)."""
    if device != "cpu":
        return threads
    return threads or os.cpu_count()


def current_environment(
    device: str, *, timing_threads: int | None, matrix_threads: int | None
) -> Environment:
    """The report's ``environment`` for a run on ``device`` here, with the whole fingerprint."""
    import torch

    versions = software_versions()
    arch, model, isa, cpus, memory = cpu_facts()
    gpu = None
    device_name = model
    if device == "cuda" and torch.cuda.is_available():
        gpu = _gpu_facts()
        device_name = gpu.name
        if torch.version.cuda:
            versions["cuda"] = str(torch.version.cuda)
        nvcc = nvcc_version()
        if nvcc:
            versions["nvcc"] = nvcc
    try:
        fingerprint = machine_fingerprint(device)
    except Exception:  # noqa: BLE001 - a machine hash that cannot be read leaves the rest
        fingerprint = ""
    return Environment(
        device=device,
        device_name=device_name,
        versions=versions,
        fingerprint=fingerprint,
        threads=timing_threads if timing_threads is not None else torch.get_num_threads(),
        fingerprint_schema=FINGERPRINT_SCHEMA,
        arch=arch,
        cpu_model=model,
        isa=isa,
        cpu_count=cpus,
        memory_gib=memory,
        gpu=gpu,
        matrix_threads=matrix_threads,
    )


@functools.lru_cache(maxsize=1)
def _cached_versions() -> tuple[tuple[str, str], ...]:
    versions = {"python": platform.python_version(), "kernelproof": _version("kernelproof")}
    for package in REPORTED_PACKAGES:
        version = _version(package)
        if version:
            versions[package] = version
    compiler = compiler_version()
    if compiler:
        versions["compiler"] = compiler
    return tuple(versions.items())


def software_versions() -> dict[str, str]:
    """Python, kernelproof, the packages of :data:`REPORTED_PACKAGES` that are installed, and
    the C++ compiler ``torch.utils.cpp_extension`` would build with."""
    return dict(_cached_versions())


@functools.lru_cache(maxsize=1)
def compiler_version() -> str:
    """The first line of ``$CXX --version`` (``c++`` when ``CXX`` is unset, as
    ``torch.utils.cpp_extension`` chooses); empty when there is no compiler."""
    return _first_line([os.environ.get("CXX") or "c++", "--version"])


@functools.lru_cache(maxsize=1)
def nvcc_version() -> str:
    """nvcc's ``release`` line (``Cuda compilation tools, release 12.4, V12.4.131``)."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    nvcc = str(Path(home) / "bin" / "nvcc") if home else shutil.which("nvcc")
    if not nvcc:
        return ""
    output = _run([nvcc, "--version"])
    lines = [line for line in output.splitlines() if "release" in line]
    return lines[-1].strip() if lines else ""


@functools.lru_cache(maxsize=1)
def cpu_facts() -> tuple[str, str, list[str], int, int]:
    """``(arch, model, isa flags, logical CPUs, memory GiB)`` of this machine."""
    try:
        text = _CPUINFO.read_text(errors="replace")
    except OSError:
        text = ""
    return (
        platform.machine() or "unknown",
        cpu_model(text),
        isa_flags(text),
        os.cpu_count() or 0,
        _memory_gib(),
    )


def isa_flags(cpuinfo: str) -> list[str]:
    """The instruction-set flags of the first processor in a /proc/cpuinfo text, sorted: on x86
    the ``flags`` that match :data:`X86_ISA_FLAG`, on ARM every ``Features`` entry (all of them
    are instruction-set extensions)."""
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if not sep:
            continue
        key = name.strip()
        if key == "flags":
            return sorted({f for f in value.split() if X86_ISA_FLAG.match(f)})
        if key == "Features":
            return sorted(set(value.split()))
    return []


def _memory_gib() -> int:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30))
    except (ValueError, OSError, AttributeError):
        return 0


def _gpu_facts() -> GpuFacts:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return GpuFacts(
        name=torch.cuda.get_device_name(),
        capability=f"{major}.{minor}",
        driver=_driver_version(),
        count=torch.cuda.device_count(),
    )


@functools.lru_cache(maxsize=1)
def _driver_version() -> str:
    """The NVIDIA driver version: from the kernel module's /proc entry, else nvidia-smi."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", text)
        if match:
            return match.group(1)
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if not smi:
        return ""
    return _first_line([smi, "--query-gpu=driver_version", "--format=csv,noheader"])


def _first_line(command: list[str]) -> str:
    output = _run(command)
    return output.splitlines()[0].strip() if output.strip() else ""


def _run(command: list[str]) -> str:
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=COMPILER_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return result.stdout if result.returncode == 0 else ""


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""
