"""A GPU MODE-format task (vector sum), written for the CPU: ``ref_kernel`` and
``generate_input`` as GPU MODE tasks define them, with sizes listed in task.yml.

Memory-bound: one read of N floats, one output value.
"""

import torch


def ref_kernel(data: torch.Tensor) -> torch.Tensor:
    return data.sum()


def generate_input(size: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=generator, dtype=torch.float32)
