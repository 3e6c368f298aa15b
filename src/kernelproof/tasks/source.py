"""A task's source text, its shape knobs, and re-rendering it with other knob values.

The controller reads tasks as text and never executes them: knobs, ``SHAPES`` and ``POLICY``
are found by parsing. Varying a knob re-renders the source with the literal replaced in place,
so derived values (``bias_shape = (out_channels, 1, 1)``) follow when a worker executes it.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelproof import python_ast
from kernelproof.errors import CandidateFormatError, TaskError
from kernelproof.tasks.hints import validate_policy, validate_shapes

#: Top-level integer constants that are settings, not sizes, and so are never varied.
NOT_KNOBS = frozenset({"SEED", "DEBUG", "VERBOSE", "WARMUP", "ITERS"})

#: Names a KernelBench reference must define at module level.
KERNELBENCH_REQUIRED = ("Model", "get_inputs", "get_init_inputs")


@dataclass(frozen=True)
class Knob:
    """A top-level integer constant of a task: a size the task can be re-rendered with."""

    name: str
    value: int
    line: int
    col: int
    end_col: int


@dataclass(frozen=True)
class TaskSource:
    """A task file as text, with its knobs and native extensions found by parsing."""

    path: Path
    text: str
    knobs: dict[str, Knob]
    shapes: list[dict[str, int]] = field(default_factory=list)
    """The task's declared ``SHAPES``: knob settings worth testing, beyond the default."""

    policy: dict[str, Any] = field(default_factory=dict)
    """The task's ``POLICY`` hints (tolerance, allowed torch ops)."""

    value_variants: list[str] = field(default_factory=list)
    """Names of the task's own value generators (``VALUE_VARIANTS``), one matrix cell each."""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def default_knobs(self) -> dict[str, int]:
        return {name: knob.value for name, knob in self.knobs.items()}

    def render(self, knobs: dict[str, int]) -> str:
        """The source with the given knobs' literals replaced. Unknown knobs are an error."""
        unknown = set(knobs) - set(self.knobs)
        if unknown:
            raise TaskError(
                f"{self.path}: no knob named {', '.join(sorted(unknown))}; "
                f"the task's knobs are {', '.join(self.knobs) or '(none)'}"
            )
        lines = self.text.splitlines(keepends=True)
        # Replace right to left within a line so earlier column offsets stay valid.
        edits = sorted(
            (self.knobs[name] for name in knobs if knobs[name] != self.knobs[name].value),
            key=lambda k: (k.line, -k.col),
        )
        for knob in edits:
            raw = lines[knob.line - 1].encode()
            replaced = raw[: knob.col] + str(int(knobs[knob.name])).encode() + raw[knob.end_col :]
            lines[knob.line - 1] = replaced.decode()
        return "".join(lines)


def read_task(path: str | Path) -> TaskSource:
    """Read and parse a KernelBench-format reference file, with clear errors for bad input."""
    path = Path(path)
    return parse_task(_read_text(path, "reference"), path)


def parse_task(text: str, path: str | Path) -> TaskSource:
    """Parse a reference's text (already read) into a :class:`TaskSource`."""
    path = Path(path)
    tree = _parse(text, path, "reference")
    defined = _top_level_names(tree)
    missing = [name for name in KERNELBENCH_REQUIRED if name not in defined]
    if missing:
        raise TaskError(
            f"{path}: the reference does not define {', '.join(missing)}. A KernelBench-format "
            "reference defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()` "
            "at module level."
        )
    knobs = _find_knobs(tree)
    return TaskSource(
        path=path,
        text=text,
        knobs=knobs,
        shapes=validate_shapes(_literal(tree, "SHAPES", path, list) or [], knobs, path),
        policy=validate_policy(_literal(tree, "POLICY", path, dict) or {}, path),
        value_variants=_value_variant_names(tree, path),
    )


#: What a KernelBench candidate must define, and how to say so when it does not.
KERNELBENCH_ENTRY = (
    "ModelNew",
    "A KernelBench-format candidate defines `class ModelNew(nn.Module)` with the same "
    "constructor and forward signature as the reference's `Model`.",
)


def read_candidate(path: str | Path, entry: tuple[str, str] = KERNELBENCH_ENTRY) -> str:
    """Read a candidate file as text and check that it parses and defines its entry point
    (``ModelNew`` for KernelBench). The candidate is untrusted: it is parsed, never executed,
    in the controller."""
    path = Path(path)
    text = _read_text(path, "candidate")
    tree = _parse(text, path, "candidate")
    name, how = entry
    if name not in _top_level_names(tree):
        raise CandidateFormatError(
            f"{path}: the candidate does not define `{name}` at module level. {how}"
        )
    return text


def top_level_names(path: Path) -> set[str]:
    """Names a Python file defines at module level; empty when it does not parse."""
    try:
        return _top_level_names(python_ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return set()


def _read_text(path: Path, role: str) -> str:
    error_type = CandidateFormatError if role == "candidate" else TaskError
    if not path.exists():
        raise error_type(f"{path}: the {role} file does not exist; check the path")
    if not path.is_file():
        raise error_type(f"{path}: the {role} path is not a file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error_type(f"{path}: the {role} file is not UTF-8 text ({exc})") from None


def _parse(text: str, path: Path, role: str) -> ast.Module:
    try:
        return python_ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        error_type = CandidateFormatError if role == "candidate" else TaskError
        raise error_type(
            f"{path}:{exc.lineno}: the {role} has a syntax error: {exc.msg}. Fix it and rerun."
        ) from None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def parse_knobs(tree: ast.Module) -> dict[str, Knob]:
    """A parsed module's knobs: its top-level non-negative integer constants, by name."""
    return _find_knobs(tree)


def _find_knobs(tree: ast.Module) -> dict[str, Knob]:
    knobs: dict[str, Knob] = {}
    for target, value in _int_assignments(tree):
        if target is None or value is None or target.startswith("_") or target in NOT_KNOBS:
            continue
        number = _constant_int(value)
        # The parser sets every node's end position (only hand-built nodes lack one).
        if number is None or number < 0 or value.end_col_offset is None:
            continue
        if value.lineno == value.end_lineno:
            knobs[target] = Knob(
                name=target,
                value=number,
                line=value.lineno,
                col=value.col_offset,
                end_col=value.end_col_offset,
            )
    return knobs


#: Operators allowed in a knob's constant expression (``N = 2048 * 2``, ``M = 1 << 20``).
_KNOB_OPERATORS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.LShift: lambda a, b: a << b,
    ast.Pow: lambda a, b: a**b,
}


def _constant_int(node: ast.expr) -> int | None:
    """The value of an integer literal or of arithmetic on integer literals, else None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None  # bool is not a size
    if isinstance(node, ast.BinOp) and type(node.op) in _KNOB_OPERATORS:
        left, right = _constant_int(node.left), _constant_int(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and right > 64):
            return None
        try:
            return _KNOB_OPERATORS[type(node.op)](left, right)
        except (ZeroDivisionError, ValueError):
            return None
    return None


def _int_assignments(tree: ast.Module) -> list[tuple[str | None, ast.expr | None]]:
    """Module-level ``name = value`` pairs, unpacking ``a, b = 3, 4`` into two pairs."""
    pairs: list[tuple[str | None, ast.expr | None]] = []
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Tuple)
            and len(node.targets[0].elts) == len(node.value.elts)
        ):
            for name, value in zip(node.targets[0].elts, node.value.elts):
                if isinstance(name, ast.Name):
                    pairs.append((name.id, value))
        else:
            pairs.append(_simple_assignment(node))
    return pairs


def _simple_assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        if isinstance(target, ast.Name):
            return target.id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
        return node.target.id, node.value
    return None, None


def _value_variant_names(tree: ast.Module, path: Path) -> list[str]:
    """The keys of a top-level ``VALUE_VARIANTS = {"name": function, ...}``, read without
    executing the task: the keys must be string literals (the values are checked in the
    worker, where the task runs)."""
    for node in tree.body:
        target, value = _simple_assignment(node)
        if target != "VALUE_VARIANTS" or value is None:
            continue
        if not isinstance(value, ast.Dict) or not all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value for k in value.keys
        ):
            raise TaskError(
                f"{path}:{node.lineno}: `VALUE_VARIANTS` must be a dict literal with string "
                'keys, e.g. `VALUE_VARIANTS = {"ties": make_ties}` where '
                "`make_ties(inputs, generator)` returns the changed inputs"
            )
        # Every key is a string constant (checked above): the filter only says so to the types.
        return [
            k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
    return []


def _literal(tree: ast.Module, name: str, path: Path, kind: type) -> Any:
    for node in tree.body:
        target, value = _simple_assignment(node)
        if target != name or value is None:
            continue
        try:
            result = _literal_value(value)
        except ValueError:
            raise TaskError(
                f"{path}:{node.lineno}: `{name}` must be written with literals only "
                "(numbers, strings, lists, dicts, `dict(key=literal)`), not names or calls"
            ) from None
        if not isinstance(result, kind):
            raise TaskError(f"{path}:{node.lineno}: `{name}` must be a {kind.__name__}")
        return result
    return None


def _literal_value(node: ast.expr) -> Any:
    """``ast.literal_eval`` that also accepts ``dict(key=literal, ...)``, common in SHAPES."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        if node.args or any(k.arg is None for k in node.keywords):
            raise ValueError("dict() with positional or ** arguments")
        return {k.arg: _literal_value(k.value) for k in node.keywords}
    if isinstance(node, ast.List):
        return [_literal_value(e) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_literal_value(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):  # ``{**other}``: a name, not a literal
            raise ValueError("** unpacking in a dict literal")
        return {
            _literal_value(k): _literal_value(v)
            for k, v in zip(node.keys, node.values)
            if k is not None
        }
    return ast.literal_eval(node)
