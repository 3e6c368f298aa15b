"""The float64 oracle a reference is judged against, and the own error assumed when none
can be made: shared by the matrix (in the reference worker) and the production guard's shadow
comparisons, which must judge alike."""

from __future__ import annotations

import copy
from typing import Any

from kernelproof.checks.tolerance import OwnError
from kernelproof.tasks.inputs import to_float64

__all__ = ["ORACLE_FALLBACK_EPS", "fallback_own_error", "oracle_model"]

#: The reference's own error assumed when no float64 oracle can be built, in units of the
#: dtype's epsilon: a float32 reduction over ~10^4 elements errs about this much, so an honest
#: kernel that sums in another order passes, while a 1% error is still 10^4 times too large.
ORACLE_FALLBACK_EPS = 64.0


def fallback_own_error(reference: Any) -> OwnError | None:
    """The own error to compare with when the reference stands in for its oracle (floating
    outputs; integer ones are compared exactly)."""
    import torch

    if not reference.is_floating_point():
        return None
    error = ORACLE_FALLBACK_EPS * torch.finfo(reference.dtype).eps
    return OwnError(error, error)


def oracle_model(model: Any) -> Any:
    """A float64 copy of ``model``: parameters and buffers, and every floating tensor a module
    keeps as a plain attribute, in a list or a dict (an RNN's ``h0``). ``None`` when the model
    cannot be copied: the reference then stands in for its oracle (see ``Harness.op_run``)."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return model
    try:
        oracle = copy.deepcopy(model).to(torch.float64)
    except Exception:  # noqa: BLE001 - the controller is told through oracle_fallback
        return None
    for module in oracle.modules():
        for name, value in list(vars(module).items()):
            if name not in ("_parameters", "_buffers", "_modules"):
                module.__dict__[name] = to_float64(value)
    return oracle
