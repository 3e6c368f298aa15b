"""The type checker's settings in pyproject.toml mean what they say: mypy reads them as
`--strict` for the schema, the worker protocol and the settings, and as its default
strictness everywhere else.

mypy has no per-module `strict` (in an override it turns the flags on for every module,
python/mypy#11401), so pyproject.toml spells the flags out; this test fails when a mypy
release adds a flag to --strict that the list lacks, or when the list leaks to other modules.
"""

from __future__ import annotations

import io
from pathlib import Path

from mypy.config_parser import parse_config_file
from mypy.main import define_options
from mypy.options import Options

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

#: A module of each strictly checked package, and modules checked at the default strictness.
STRICT_MODULES = [
    "kernelproof.schema.report",
    "kernelproof.protocol.requests",
    "kernelproof.config",
]
DEFAULT_MODULES = ["kernelproof.cli", "kernelproof.controller.verify", "kernelproof.units"]


def _options() -> Options:
    options = Options()
    strict_requested: list[bool] = []
    stderr = io.StringIO()
    parse_config_file(
        options,
        lambda: strict_requested.append(True),
        str(PYPROJECT),
        stdout=io.StringIO(),
        stderr=stderr,
    )
    assert stderr.getvalue() == "", f"mypy rejects pyproject.toml: {stderr.getvalue()}"
    assert not strict_requested, (
        "strict = true makes every module strict, in an override "
        "too: spell the flags out for the strict modules"
    )
    return options


def _strict_assignments() -> list[tuple[str, bool]]:
    """What mypy's own --strict sets, flag by flag (this mypy's list)."""
    _, _, assignments = define_options()
    return [(name, bool(value)) for name, value in assignments]


def test_the_schema_protocol_and_settings_get_every_flag_of_strict() -> None:
    options = _options()
    for module in STRICT_MODULES:
        effective = options.clone_for_module(module)
        missing = [
            name for name, value in _strict_assignments() if getattr(effective, name) != value
        ]
        assert missing == [], f"{module} lacks these flags of --strict: {missing}"


def test_other_modules_keep_the_default_strictness() -> None:
    options = _options()
    defaults = Options()
    for module in DEFAULT_MODULES:
        effective = options.clone_for_module(module)
        for name in (
            "disallow_untyped_defs",
            "disallow_any_generics",
            "warn_return_any",
            "implicit_reexport",
            "check_untyped_defs",
        ):
            assert getattr(effective, name) == getattr(defaults, name), (module, name)


def test_the_target_is_the_oldest_python_the_package_supports() -> None:
    assert _options().python_version == (3, 10)
