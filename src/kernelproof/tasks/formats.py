"""Task formats: adapters that turn a reference (and a candidate) into what the pipeline runs.

The pipeline runs KernelBench-format tasks (``Model``/``get_inputs``/``get_init_inputs`` with
integer knobs) and candidates defining ``ModelNew``. Other formats are adapted into that shape
by generating a small wrapper around the original files. Each adapter answers "can you handle
this reference?"; a reference that no adapter, or more than one, accepts is an error.
"""

from __future__ import annotations

from pathlib import Path

from kernelproof.errors import TaskError
from kernelproof.tasks.gpumode import GpuModeFormat
from kernelproof.tasks.loaded import LoadedTask, TaskFormat
from kernelproof.tasks.source import (
    KERNELBENCH_REQUIRED,
    read_candidate,
    read_task,
    top_level_names,
)


class KernelBenchFormat:
    """``Model``, ``get_inputs``, ``get_init_inputs`` (plus optional ``SHAPES``/``POLICY``)."""

    name = "kernelbench"

    def accepts(self, reference: Path) -> bool:
        return reference.is_file() and set(KERNELBENCH_REQUIRED) <= top_level_names(reference)

    def load(self, reference: Path, candidate: Path, scratch: Path) -> LoadedTask:
        task = read_task(reference)
        text = read_candidate(candidate)
        return LoadedTask(
            task=task, candidate_path=candidate, candidate_text=text, candidate_file=candidate
        )


def registry() -> list[TaskFormat]:
    """Every task format, each asked in turn whether it accepts a reference."""
    return [KernelBenchFormat(), GpuModeFormat()]


def load_task(reference: Path, candidate: Path, scratch: Path) -> LoadedTask:
    """Load ``reference`` and ``candidate`` through the one format that accepts them."""
    if not reference.exists():
        raise TaskError(f"{reference}: the reference does not exist; check the path")
    matching = [f for f in registry() if f.accepts(reference)]
    if len(matching) > 1:
        raise TaskError(
            f"{reference}: ambiguous task: it looks like "
            f"{' and '.join(f.name for f in matching)}; keep one format per task"
        )
    if not matching:
        if reference.is_file() and reference.suffix == ".py":
            return KernelBenchFormat().load(reference, candidate, scratch)  # its precise error
        raise TaskError(
            f"{reference}: not a task kernelproof knows. Give a KernelBench file (defining "
            "Model, get_inputs, get_init_inputs) or a GPU MODE task folder (reference.py with "
            "ref_kernel and generate_input, plus task.yml)."
        )
    return matching[0].load(reference, candidate, scratch)
