"""The command-line flags of :class:`~kernelproof.config.Settings` fields, declared once.

:data:`SETTING_FLAGS` is the one table: each row names a settings field, its flag and how the
flag's value becomes an override. From it come the click options of every command that takes
settings (:func:`setting_options`, which hands the command one typed ``overrides`` dict: a flag
not given is absent, so the profile and the task's ``POLICY`` below it still apply) and the
words of a report's repro command (:func:`flag_words`). A reader follows ``--budget`` here to
``budget_s``, then on :class:`Settings` to the stopping rule; so does the type checker.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args

import click

from kernelproof.config import PROFILES, Device, SettingsOverrides

__all__ = [
    "CLI_DTYPES",
    "DB_OPTION",
    "DEVICE_OPTION",
    "POLICY_SETTINGS",
    "PROFILE_OPTION",
    "SETTING_FLAGS",
    "SettingFlag",
    "flag_words",
    "parse_knobs",
    "review_output_options",
    "setting_options",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Working dtypes a command may ask for. float64 is left out: it is the oracle's dtype, and a
#: candidate verified in it says nothing about the dtype it will run in.
CLI_DTYPES = ("float32", "float16", "bfloat16")

#: How a flag carries its setting:
#: ``value`` its argument is the value; ``on``/``off`` a bare flag sets True/False;
#: ``switch`` a ``--x/--no-x`` pair; ``knobs`` ``K=V,...``; ``each`` repeatable, a list.
FlagKind = Literal["value", "on", "off", "switch", "knobs", "each"]


def parse_knobs(text: str | None) -> dict[str, int] | None:
    """``dim=3,batch_size=1`` as a dict of knob values; None for no text."""
    if not text:
        return None
    knobs = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if not name.strip() or not value.strip().lstrip("-").isdigit():
            raise click.BadParameter(
                f"{part!r} is not NAME=INTEGER, e.g. dim=3", param_hint="--knobs"
            )
        knobs[name.strip()] = int(value)
    return knobs


@dataclass(frozen=True)
class SettingFlag:
    """One settings field on the command line."""

    setting: str
    """The :class:`~kernelproof.config.Settings` field it sets."""
    flag: str
    """The flag as typed (``--budget``; ``--fail-fast/--no-fail-fast`` for a switch)."""
    help: str
    kind: FlagKind = "value"
    type: Any = None
    """The click type of a ``value`` or ``each`` flag's argument."""
    metavar: str | None = None

    def option(self) -> Callable[[F], F]:
        """The click option: its parameter is named after the setting."""
        extra: dict[str, Any] = {"help": self.help}
        if self.kind in ("on", "off"):
            extra["is_flag"] = True
        elif self.kind == "switch":
            extra["default"] = None
        elif self.kind == "each":
            extra.update(type=self.type, multiple=True)
        else:
            extra.update(type=self.type, default=None)
        if self.metavar:
            extra["metavar"] = self.metavar
        return click.option(self.flag, self.setting, **extra)

    def override(self, given: Any) -> Any:
        """The override the flag's parsed value asks for; None when it was not given."""
        if self.kind == "on":
            return True if given else None
        if self.kind == "off":
            return False if given else None
        if self.kind == "knobs":
            return parse_knobs(given)
        if self.kind == "each":
            return list(given) or None
        if isinstance(given, Path):
            return str(given)
        return given

    def words(self, value: Any) -> list[str]:
        """The flag words that ask for ``value`` (empty when the flag cannot differ from it)."""
        name = self.flag.split("/")[0]
        if self.kind == "on":
            return [name] if value else []
        if self.kind == "off":
            return [] if value else [name]
        if self.kind == "switch":
            return [name] if value else ["--no-" + name.removeprefix("--")]
        if self.kind == "knobs":
            return [name, ",".join(f"{k}={n}" for k, n in value.items())] if value else []
        if self.kind == "each":
            return [word for item in value or [] for word in (name, str(item))]
        if value is None:
            return []
        return [name, f"{value:g}" if isinstance(value, float) else str(value)]


_FLOAT_POSITIVE = click.FloatRange(min=0, min_open=True)
_PATH = click.Path(path_type=Path)

#: Every settings field that has a flag, in the order ``--help`` lists them.
SETTING_FLAGS: tuple[SettingFlag, ...] = (
    SettingFlag(
        "device",
        "--device",
        "Device to run on (default: cpu).",
        type=click.Choice(get_args(Device)),
    ),
    SettingFlag(
        "dtype",
        "--dtype",
        "Working dtype (default: the task's own).",
        type=click.Choice(CLI_DTYPES),
    ),
    SettingFlag(
        "atol",
        "--atol",
        "Fixed absolute tolerance (KernelBench-style) instead of the oracle's.",
        type=click.FloatRange(min=0),
    ),
    SettingFlag(
        "rtol",
        "--rtol",
        "Fixed relative tolerance (KernelBench-style) instead of the oracle's.",
        type=click.FloatRange(min=0),
    ),
    SettingFlag(
        "allow_torch",
        "--allow-torch",
        "Torch ops in the candidate are expected (passthrough is only info).",
        "on",
    ),
    SettingFlag(
        "strict",
        "--strict",
        "Any of the reference's heavy ops run by the candidate is suspect.",
        "on",
    ),
    SettingFlag(
        "shape_variants", "--fixed-shapes", "Only the task's own shape, as KernelBench does.", "off"
    ),
    SettingFlag(
        "insecure_sandbox",
        "--insecure-sandbox",
        "Accept a machine whose kernel cannot fully sandbox the candidate (no user "
        "namespaces or Landlock): the gap becomes a warn, not suspect. See "
        "docs/security.md.",
        "on",
    ),
    SettingFlag(
        "seeds", "--seeds", "Seeds at the default shape (default 5).", type=click.IntRange(min=1)
    ),
    SettingFlag("base_seed", "--seed", "Base seed: reproduces an earlier run.", type=int),
    SettingFlag(
        "budget_s", "--budget", "Timing budget in seconds, per timing phase.", type=_FLOAT_POSITIVE
    ),
    SettingFlag("timing", "--no-timing", "Skip the timing phase.", "off"),
    SettingFlag(
        "stress_shapes",
        "--stress-shapes",
        "Also push each knob to the largest size that fits the budget.",
        "on",
    ),
    SettingFlag(
        "threads",
        "--threads",
        "Intra-op threads per worker (default on CPU: 1).",
        type=click.IntRange(min=1),
    ),
    SettingFlag("hot", "--hot", "Time with warm caches (no flush before each call).", "on"),
    SettingFlag(
        "cache_flush",
        "--cache-flush",
        "CPU cold-cache flush: evict the call's own data (default) or write a buffer "
        "twice the last-level cache (slower; evicts everything).",
        type=click.Choice(["data", "full"]),
    ),
    SettingFlag(
        "compile_baseline",
        "--no-compile-baseline",
        "Do not time torch.compile of the reference.",
        "off",
    ),
    SettingFlag("cuda_graphs", "--cuda-graphs", "On CUDA, time CUDA-graph replays.", "on"),
    SettingFlag(
        "default_knobs",
        "--knobs",
        "Default shape to use instead of the task's own, e.g. dim=3,batch_size=1.",
        "knobs",
        metavar="K=V,...",
    ),
    SettingFlag(
        "input_seeds",
        "--input-seed",
        "Exact input seed(s) for the default shape (repeatable): reruns a repro.",
        "each",
        type=int,
    ),
    SettingFlag("shrink", "--no-shrink", "Do not shrink failures to minimal repros.", "off"),
    SettingFlag(
        "inputs_file",
        "--inputs",
        "Also run the candidate on these saved arguments (a guard incident's "
        "inputs.pt) at the default shape; the matrix is then the default seeds and "
        "this cell.",
        type=_PATH,
        metavar="FILE",
    ),
    SettingFlag(
        "fail_fast",
        "--fail-fast/--no-fail-fast",
        "Stop at the first decisive failure (same verdict, fewer cells; the rl profile's default).",
        "switch",
    ),
)

_BY_SETTING = {flag.setting: flag for flag in SETTING_FLAGS}

#: The settings that decide how a candidate is judged: every command that verifies takes them.
POLICY_SETTINGS = (
    "device",
    "dtype",
    "atol",
    "rtol",
    "allow_torch",
    "strict",
    "shape_variants",
    "insecure_sandbox",
)


def flag_words(setting: str, value: Any) -> list[str] | None:
    """The ``verify`` flag words that ask for ``value`` of ``setting``; None when no flag
    sets it."""
    flag = _BY_SETTING.get(setting)
    return None if flag is None else flag.words(value)


def setting_options(*settings: str) -> Callable[[F], F]:
    """Add the flags of ``settings`` (names of :data:`SETTING_FLAGS` rows) to a command; the
    command receives them as one ``overrides`` keyword: the settings the given flags ask for."""
    flags = [_BY_SETTING[name] for name in settings]

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def with_overrides(*args: Any, **kwargs: Any) -> Any:
            overrides: SettingsOverrides = {}
            for flag in flags:
                value = flag.override(kwargs.pop(flag.setting))
                if value is not None:
                    overrides[flag.setting] = value  # type: ignore[literal-required]  # a row's setting is a Settings field (tested)
            return command(*args, overrides=overrides, **kwargs)

        decorated: Any = with_overrides
        for flag in reversed(flags):
            decorated = flag.option()(decorated)
        return decorated  # type: ignore[no-any-return,unused-ignore]  # click decorators: untyped in some releases

    return decorate


PROFILE_OPTION = click.option(
    "--profile",
    type=click.Choice(sorted(PROFILES)),
    default="default",
    show_default=True,
    help="A named set of settings, below the task's POLICY and the flags.",
)

DB_OPTION = click.option(
    "--db",
    "db_url",
    default=None,
    metavar="URL",
    help="SQLAlchemy URL of the results store (default: $KERNELPROOF_DB, else ./kernelproof.db).",
)

DEVICE_OPTION = _BY_SETTING["device"].option()


def review_output_options(command: F) -> F:
    """``--html``, ``--junit`` and ``--sarif``: where a report's review views are written
    (``verify`` and ``report`` take the same three)."""
    for option in reversed(
        (
            click.option(
                "--html", "html_path", type=_PATH, default=None, help="Write the HTML packet here."
            ),
            click.option(
                "--junit",
                "junit_path",
                type=_PATH,
                default=None,
                help="Write JUnit XML here (one test case per check).",
            ),
            click.option(
                "--sarif",
                "sarif_path",
                type=_PATH,
                default=None,
                help="Write SARIF 2.1.0 here (findings with a source location).",
            ),
        )
    ):
        command = option(command)
    return command
