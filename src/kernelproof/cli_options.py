"""Command-line options that several ``kernelproof`` commands share, declared once.

Each is a click decorator. :func:`policy_options` bundles the options that decide how a
candidate is judged (``verify``'s and ``bench``'s), and hands the command one dict of
:class:`~kernelproof.config.Settings` overrides: ``None`` means "not given", so the profile and
the task's ``POLICY`` below it still apply.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, get_args

import click

from kernelproof.config import PROFILES, Device

F = TypeVar("F", bound=Callable[..., Any])

#: Working dtypes a command may ask for. float64 is left out: it is the oracle's dtype, and a
#: candidate verified in it says nothing about the dtype it will run in.
CLI_DTYPES = ("float32", "float16", "bfloat16")

DEVICE_OPTION = click.option(
    "--device", type=click.Choice(get_args(Device)), default=None,
    help="Device to run on (default: cpu).")

DTYPE_OPTION = click.option(
    "--dtype", type=click.Choice(CLI_DTYPES), default=None,
    help="Working dtype (default: the task's own).")

ATOL_OPTION = click.option(
    "--atol", type=click.FloatRange(min=0), default=None,
    help="Fixed absolute tolerance (KernelBench-style) instead of the oracle's.")

RTOL_OPTION = click.option(
    "--rtol", type=click.FloatRange(min=0), default=None,
    help="Fixed relative tolerance (KernelBench-style) instead of the oracle's.")

PROFILE_OPTION = click.option(
    "--profile", type=click.Choice(sorted(PROFILES)), default="default", show_default=True,
    help="A named set of settings, below the task's POLICY and the flags.")

DB_OPTION = click.option(
    "--db", "db_url", default=None, metavar="URL",
    help="SQLAlchemy URL of the results store (default: $KERNELPROOF_DB, else ./kernelproof.db).")

THREADS_OPTION = click.option(
    "--threads", type=click.IntRange(min=1), default=None,
    help="Intra-op threads per worker (default on CPU: 1).")


def policy_options(command: F) -> F:
    """Add the options that decide how a candidate is judged (``--device``, ``--dtype``,
    ``--atol``, ``--rtol``, ``--allow-torch``, ``--strict``, ``--fixed-shapes``,
    ``--insecure-sandbox``); the command receives them as one ``policy`` keyword: the Settings
    overrides they ask for."""

    @functools.wraps(command)
    def with_policy(*args: Any, device: str | None, dtype: str | None, atol: float | None,
                    rtol: float | None, allow_torch: bool, strict: bool, fixed_shapes: bool,
                    insecure_sandbox: bool, **kwargs: Any) -> Any:
        policy = {
            "device": device, "dtype": dtype, "atol": atol, "rtol": rtol,
            "allow_torch": True if allow_torch else None,
            "strict": True if strict else None,
            "shape_variants": False if fixed_shapes else None,
            "insecure_sandbox": True if insecure_sandbox else None,
        }
        return command(*args, policy=policy, **kwargs)

    decorated: Any = with_policy
    for option in reversed((
        DEVICE_OPTION, DTYPE_OPTION, ATOL_OPTION, RTOL_OPTION,
        click.option("--allow-torch", is_flag=True,
                     help="Torch ops in the candidate are expected (passthrough is only info)."),
        click.option("--strict", is_flag=True,
                     help="Any of the reference's heavy ops run by the candidate is suspect."),
        click.option("--fixed-shapes", is_flag=True,
                     help="Only the task's own shape, as KernelBench does."),
        click.option("--insecure-sandbox", is_flag=True,
                     help="Accept a machine whose kernel cannot fully sandbox the candidate "
                          "(no user namespaces or Landlock): the gap becomes a warn, not "
                          "suspect. See docs/security.md."),
    )):
        decorated = option(decorated)
    return decorated
