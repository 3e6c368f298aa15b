"""Plain words for a task's failures that have a known cause and a known fix.

A task written for CUDA (GPU MODE's published problems make their inputs with
``torch.Generator(device="cuda")``) fails on a CPU run with torch's raw text, a paragraph about
linker flags. The user needs one line naming ``--device cuda``.
"""

from __future__ import annotations

import re

from kernelproof.report.sentences import shorten

#: Fragments of torch's errors when task code asks for CUDA and the run has none.
CUDA_MISSING_PATTERNS = (
    r"Cannot get CUDA generator",
    r"Torch not compiled with CUDA enabled",
    r"Found no NVIDIA driver",
    r"CUDA driver initialization failed",
    r"No CUDA GPUs are available",
    r"Attempting to deserialize object on a CUDA device",
)

#: Characters of torch's own message kept in the one-line explanation.
QUOTED_CHARS = 60


def explain_task_failure(message: str, device: str) -> str:
    """``message`` itself, or one line saying what to do when its cause is known."""
    if device != "cuda" and any(re.search(p, message) for p in CUDA_MISSING_PATTERNS):
        quoted = shorten(message.split(":", 1)[-1].strip(), QUOTED_CHARS)
        return (
            f"the task makes CUDA tensors but this run is on --device {device}: rerun "
            f"with --device cuda on a machine with a CUDA GPU (torch: {quoted!r})"
        )
    return message
