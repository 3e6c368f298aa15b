# kernelproof-reference: ../../softmax/reference.py
# kernelproof-expect: suspect
"""An attack on ``kernelproof recheck``: a correct softmax that, on its first call, writes a file
next to itself, which only a candidate outside the sandbox can do (a stand-in for planting a
build artifact, or reading a token off the CI machine).

How it gets there: reports are plain JSON that teams keep and move. The attacker verifies a
benign candidate, then edits the report's ``settings`` (``sandbox: false``,
``insecure_sandbox: true``, ``integrity_probes: false``) and swaps this file in for the benign
one. The next ``kernelproof recheck`` in CI sees the candidate's hash change, re-proves it "with
the original settings", and, had it applied them, would run this code with the walls down and
call it verified.

What catches it: a re-proof never takes the walls down from a report (``WALL_SETTINGS`` in
``suite/recheck.py``; ``--trust-settings`` is the explicit opt-in). Sandboxed, the write is
refused by Landlock and recorded by the audit hooks (``audit-file-access``, ``suspect``).
``tests/proof/test_recheck_runs.py`` runs the attack both ways.
"""

from pathlib import Path

import torch
import torch.nn as nn

MARKER = Path(__file__).with_name("ESCAPED")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.tried = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.tried:
            self.tried = True
            try:
                MARKER.write_text("written from outside the sandbox\n")
            except OSError:
                pass
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
