"""Shared helpers of the problems in this suite, as in GPU MODE's reference-kernels: each
problem's ``task.yml`` names this file (``../utils.py``) among its sources."""

import torch


def verbose_allclose(received: torch.Tensor, expected: torch.Tensor, rtol: float = 1e-05,
                     atol: float = 1e-08) -> list[str]:
    """Reasons ``received`` differs from ``expected`` (empty when they match)."""
    if received.shape != expected.shape:
        return [f"shape mismatch: got {tuple(received.shape)}, expected {tuple(expected.shape)}"]
    close = torch.isclose(received, expected, rtol=rtol, atol=atol, equal_nan=True)
    wrong = int((~close).sum())
    return [f"{wrong} element(s) differ beyond rtol={rtol}, atol={atol}"] if wrong else []


def make_match_reference(reference, rtol: float = 1e-05, atol: float = 1e-08):
    """A ``check_implementation(data, output)`` that compares with ``reference(data)``."""

    def check_implementation(data, output) -> str:
        reasons = verbose_allclose(output, reference(data), rtol=rtol, atol=atol)
        return "mismatch found! " + reasons[0] if reasons else ""

    return check_implementation
