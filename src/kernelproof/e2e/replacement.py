"""One ``--replace TARGET=CANDIDATE[:TASK]``, parsed, and the static check that the candidate's
``ModelNew`` can take the replaced module's constructor arguments."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kernelproof.errors import UsageError


@dataclass(frozen=True)
class Replacement:
    """A submodule of the host to replace, the candidate that replaces it, and optionally the
    task its isolated verification uses instead of the generated one."""

    target: str
    """A dotted submodule path (``blocks.0.attn_norm``) or a module class name (``RMSNorm``)."""

    candidate: Path
    task: Path | None = None

    @classmethod
    def parse(cls, text: str) -> Replacement:
        """``TARGET=CANDIDATE`` or ``TARGET=CANDIDATE:TASK``."""
        target, separator, rest = text.partition("=")
        candidate, _, task = rest.partition(":")
        if not separator or not target.strip() or not candidate.strip():
            raise UsageError(
                f"--replace {text!r} is not TARGET=CANDIDATE[:TASK]; write e.g. "
                "--replace RMSNorm=my_rmsnorm.py or --replace "
                "blocks.0.attn_norm=my_rmsnorm.py:rmsnorm_task.py"
            )
        return cls(
            target=target.strip(),
            candidate=Path(candidate.strip()),
            task=Path(task.strip()) if task.strip() else None,
        )

    def describe(self) -> str:
        task = f":{self.task}" if self.task else ""
        return f"{self.target}={self.candidate}{task}"


def constructor_mismatch(
    candidate_text: str, arguments: list[object], replaced_signature: str
) -> str | None:
    """Why ``ModelNew(*arguments)`` cannot work, read from the candidate's source (never
    executed here), naming both signatures; None when it can, or when the source does not say
    (a ``ModelNew`` built dynamically is left to the worker to try)."""
    tree = ast.parse(candidate_text)
    model = next(
        (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "ModelNew"),
        None,
    )
    if model is None:
        return None
    init = next(
        (
            node
            for node in model.body
            if isinstance(node, ast.FunctionDef) and node.name == "__init__"
        ),
        None,
    )
    rebinds = any(
        isinstance(node, (ast.FunctionDef, ast.Assign))
        and (
            getattr(node, "name", None) == "__new__"
            or any(
                isinstance(t, ast.Name) and t.id in ("__new__", "__init__")
                for t in getattr(node, "targets", [])
            )
        )
        for node in model.body
    )
    if init is None or model.decorator_list or model.keywords or init.decorator_list or (rebinds):
        return None  # construction the source alone does not decide: the worker tries it
    spec = init.args
    positional = [*spec.posonlyargs, *spec.args][1:]  # without self
    required = len(positional) - len(spec.defaults)
    required_keywords = [a.arg for a, d in zip(spec.kwonlyargs, spec.kw_defaults) if d is None]
    given = len(arguments)
    if given < required or (given > len(positional) and spec.vararg is None) or (required_keywords):
        shown = ", ".join(ast.unparse(a) for a in positional) or ""
        if spec.vararg is not None:
            shown += f"{', ' if shown else ''}*{spec.vararg.arg}"
        for keyword in required_keywords:
            shown += f", *, {keyword}"
        return (
            f"ModelNew({shown}) cannot take the place of {replaced_signature}: the host "
            f"built it with {given} argument(s) {arguments!r}. Give ModelNew the replaced "
            "module's constructor parameters"
        )
    return None
