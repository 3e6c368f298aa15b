# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: broken
"""Fills the disk from its own scratch folder: on its first call it writes 1.5 GiB in 64 MiB
files (each under the per-file limit, ``RLIMIT_FSIZE``) into the folder the sandbox lets it
write, then answers correctly. Before the cap, the verdict was ``verified`` and a server
verifying it (or a batch of it) filled its disk; after ``kill -9`` of the server the files
stayed.

Issue 27. Landlock confines *where* a candidate writes, not *how much*.

What catches it: the controller measures the candidate's scratch and build folders while it
waits for each answer (workers/write_cap.py) and kills a worker that holds more than the cap
(1 GiB); its verdict is ``broken`` and says it wrote over the sandbox's cap.
"""

import os

import torch
import torch.nn as nn

#: What it writes: 24 files of 64 MiB.
CHUNK = b"\0" * (64 << 20)
FILES = 24


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.flooded = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.flooded:
            self.flooded = True
            for index in range(FILES):
                with open(os.path.join(os.getcwd(), f"flood-{index}.bin"), "wb") as handle:
                    handle.write(CHUNK)
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
