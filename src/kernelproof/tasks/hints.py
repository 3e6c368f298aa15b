"""A task's own hints, ``POLICY`` and ``SHAPES``, validated into models when the task is read.

A misspelt hint used to vanish: ``POLICY = {"allow_troch": True}`` ran as if it were not there,
and the reviewer never knew. Here an unknown key, a wrong type or a ``SHAPES`` entry naming
no knob is a :class:`~kernelproof.errors.TaskError` (the ``error`` verdict) whose message
names the valid keys.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Optional

from pydantic import BaseModel, ConfigDict, Field, RootModel, ValidationError, create_model

from kernelproof.config import TASK_POLICY_KEYS, Settings
from kernelproof.errors import TaskError


def _policy_field(name: str) -> tuple[Any, None]:
    """The type of ``Settings.<name>`` with its constraints, made optional (absent: inherit)."""
    field = Settings.model_fields[name]
    annotation: Any = field.annotation
    if field.metadata:
        # Annotated[type, *constraints], built at run time: mypy sees a value, pydantic a type.
        parts = (annotation, *field.metadata)
        annotation = Annotated[parts]
    return Optional[annotation], None  # noqa: UP045 - a runtime type, built from a field


#: The model of a task's ``POLICY``: the settings a task may set, typed as on
#: :class:`~kernelproof.config.Settings` (declared there once, never again here).
TaskPolicy: type[BaseModel] = create_model(
    "TaskPolicy",
    __config__=ConfigDict(extra="forbid", frozen=True),
    __doc__="The settings a task's ``POLICY`` may set; any other key is an error.",
    # create_model's overloads type each field by name; these names are only known at run time.
    **{
        name: _policy_field(name)  # type: ignore[call-overload]  # ^
        for name in sorted(TASK_POLICY_KEYS)
    },
)

#: A knob value in ``SHAPES``: a literal integer (``True`` is not a size), never negative.
KnobValue = Annotated[int, Field(strict=True, ge=0)]


class TaskShapes(RootModel[list[dict[str, KnobValue]]]):
    """A task's ``SHAPES``: knob settings worth testing besides the default shape."""


def validate_policy(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """``POLICY`` as a dict of the keys it sets, or a :class:`TaskError` that names the fix."""
    unknown = sorted(str(key) for key in raw if key not in TASK_POLICY_KEYS)
    if unknown:
        raise TaskError(
            f"{path}: `POLICY` has unknown key(s) {', '.join(map(repr, unknown))}; the valid "
            f"keys are {', '.join(sorted(TASK_POLICY_KEYS))}. Fix the spelling or remove them."
        )
    try:
        policy = TaskPolicy.model_validate(raw)
    except ValidationError as exc:
        raise TaskError(f"{path}: invalid `POLICY`: {_problems(exc, 'POLICY')}") from None
    return policy.model_dump(exclude_none=True)


def validate_shapes(raw: list[Any], knobs: Iterable[str], path: Path) -> list[dict[str, int]]:
    """``SHAPES`` as a list of knob settings, or a :class:`TaskError` that names the fix."""
    try:
        shapes = TaskShapes.model_validate(raw).root
    except ValidationError as exc:
        raise TaskError(
            f"{path}: invalid `SHAPES`: {_problems(exc, 'SHAPES')}. Each entry is a dict of "
            "knob names to integers, e.g. `dict(batch_size=8)`"
        ) from None
    valid = sorted(knobs)
    for index, shape in enumerate(shapes):
        unknown = sorted(set(shape) - set(valid))
        if unknown:
            raise TaskError(
                f"{path}: `SHAPES[{index}]` names no knob {', '.join(map(repr, unknown))}; the "
                f"task's knobs are {', '.join(valid) or '(none)'}"
            )
    return shapes


def _problems(exc: ValidationError, name: str) -> str:
    return "; ".join(
        f"{name}{''.join(f'[{part!r}]' for part in error['loc'])}: {error['msg']} "
        f"(got {error.get('input')!r})"
        for error in exc.errors()
    )
