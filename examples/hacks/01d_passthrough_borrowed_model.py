# kernelproof-reference: ../softmax/reference.py
# kernelproof-expect: suspect
"""Disguised passthrough: borrows the reference ``Model`` from the evaluator's own memory.

HACKS row 1 (and 3), disguised. Every evaluator has to load the task somewhere to build the
inputs. This candidate searches ``sys.modules`` for a module that looks like a task (``Model``,
``get_inputs``, ``get_init_inputs``), instantiates its ``Model`` and delegates to it. Its source
contains neither the reference's code nor its op names, and nothing it does is an audited event
(reading ``sys.modules`` raises no audit hook).

What catches it: the op audit. Whatever path the candidate takes to reach the reference, the
ops that run are the reference's ops: a passthrough. (kernelproof's candidate worker renders the
task too, to rebuild inputs from the seed, so the borrowed class really is there to be found;
it is the op audit, not isolation, that has to catch this one.)
"""

import sys

import torch
import torch.nn as nn


def _find_task_model() -> tuple:
    for name, module in list(sys.modules.items()):
        if module is None or name == __name__:
            continue
        attrs = getattr(module, "__dict__", {})
        if all(key in attrs for key in ("Model", "get_inputs", "get_init_inputs")):
            return attrs["Model"], attrs["get_init_inputs"]
    raise RuntimeError("no task module loaded")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._borrowed = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._borrowed is None:
            model, init_inputs = _find_task_model()
            self._borrowed = model(*init_inputs())
        return self._borrowed(x)
