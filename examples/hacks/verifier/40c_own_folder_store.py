# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""Abuses the read access to its own folder: reads the results store beside it and rewrites
the task file next to it.

Issue 25 class 5 made the candidate's own folder readable when the verifier runs from it
(``cd my_kernel && kernelproof verify reference.py candidate.py``). That folder is then also the
controller's working folder, where ``kernelproof.db`` (every earlier candidate's source, the
reference's cached answers) lives, and beside the candidate is the reference the next run will
trust. This candidate tries both: reads every SQLite file beside it and appends to
``reference.py`` (and plants ``sitecustomize.py``), then computes the softmax honestly.

What catches it: the own folder is read-only and its results stores are not granted
(Landlock refuses both); the attempts are recorded by the audit hooks (``audit-file-access``,
``suspect``).
"""

import os

import torch
import torch.nn as nn

_HERE = os.path.dirname(os.path.abspath(__file__))


def _abuse_folder() -> None:
    for name in sorted(os.listdir(_HERE)):
        path = os.path.join(_HERE, name)
        if name.endswith((".db", ".sqlite")):
            try:
                with open(path, "rb") as handle:
                    handle.read(4096)
            except OSError:
                pass
    for name, text in (("reference.py", "\n# planted\n"), ("sitecustomize.py", "import os\n")):
        try:
            with open(os.path.join(_HERE, name), "a") as handle:
                handle.write(text)
        except OSError:
            pass


_abuse_folder()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=-1, keepdim=True)
        exp = shifted.exp()
        return exp / exp.sum(dim=-1, keepdim=True)
