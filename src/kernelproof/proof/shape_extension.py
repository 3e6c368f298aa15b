"""From production drift back to proof in one step: the signatures that fell outside the
envelope, turned into the task's ``SHAPES`` so that the next ``verify`` covers them.

A signature becomes a shape when each of its sizes is one the matrix's cells imply: a size that
never varied must be the same, and a size that followed a knob (``size = scale * knob +
offset``, exact on every verified cell) gives that knob's value. What a shape cannot express (a
dtype, a layout, an argument that is not a tensor, a size no knob moves) is listed with its
reason: such calls stay with the reference, and only a task change can prove them. Pure, except
:func:`write_shapes`, which edits the task file's ``SHAPES`` assignment (and nothing else).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from kernelproof.schema.drift import DriftSummary
from kernelproof.schema.envelope import (
    CallSignature,
    Envelope,
    TensorSignature,
    ValueSignature,
    integer_line,
)
from kernelproof.tasks.source import read_task

__all__ = ["ShapeProposal", "Unexpressible", "propose_shapes", "shapes_source", "write_shapes"]


@dataclass
class ShapeProposal:
    """One new ``SHAPES`` entry and the production signatures it covers."""

    knobs: dict[str, int]
    calls: int = 0
    signatures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Unexpressible:
    """A production signature no ``SHAPES`` entry can cover, and why."""

    signature: str
    calls: int
    reason: str


#: How one input size is bound to the knobs: a constant, or ``scale * knob + offset``.
Line = tuple[str | None, int, int]


def propose_shapes(
    summary: DriftSummary, existing: list[dict[str, int]] | None = None
) -> tuple[list[ShapeProposal], list[Unexpressible]]:
    """New ``SHAPES`` entries for the signatures of ``summary`` outside the envelope, most
    called first; ``existing`` entries (the task's own) are not proposed again."""
    envelope = summary.envelope
    if envelope is None or not envelope.signatures:
        return [], [
            Unexpressible(
                o.signature.describe(),
                o.calls,
                "the log's envelope holds no verified signature to map sizes from",
            )
            for o in summary.outside
        ]
    template = envelope.templates[0] if envelope.templates else envelope.signatures[0]
    lines = _size_lines(envelope, template)
    known = [dict(k) for k in existing or []] + [dict(k) for k in envelope.knobs]
    proposals: dict[tuple[tuple[str, int], ...], ShapeProposal] = {}
    refused = []
    for entry in summary.outside:
        knobs, reason = _knobs_of(entry.signature, template, lines, envelope.default_knobs)
        if knobs is None:
            refused.append(Unexpressible(entry.signature.describe(), entry.calls, reason))
            continue
        if knobs in known:
            refused.append(
                Unexpressible(
                    entry.signature.describe(),
                    entry.calls,
                    f"already a shape of the task ({_text(knobs)}); the "
                    "matrix must have failed or skipped it there",
                )
            )
            continue
        proposal = proposals.setdefault(tuple(sorted(knobs.items())), ShapeProposal(knobs))
        proposal.calls += entry.calls
        proposal.signatures.append(entry.signature.describe())
    ordered = sorted(proposals.values(), key=lambda p: -p.calls)
    return ordered, refused


def shapes_source(shapes: list[dict[str, int]]) -> str:
    """A ``SHAPES = [...]`` assignment, one ``dict(...)`` per line."""
    body = "".join(
        f"    dict({', '.join(f'{k}={v}' for k, v in shape.items())}),\n" for shape in shapes
    )
    return f"SHAPES = [\n{body}]\n"


def write_shapes(task: Path, proposals: list[ShapeProposal]) -> list[dict[str, int]]:
    """Add the proposals to the task file's ``SHAPES`` (kept first, in order), replacing only
    that assignment's lines, or appending one. Returns the new ``SHAPES``; the file is
    rewritten whole or not at all (a temporary file renamed over it)."""
    source = read_task(task)  # validates the task first: a broken file is not edited
    shapes = [dict(s) for s in source.shapes]
    for proposal in proposals:
        if proposal.knobs not in shapes:
            shapes.append(dict(proposal.knobs))
    text = source.text
    lines = text.splitlines(keepends=True)
    assignment = _shapes_assignment(text)
    block = shapes_source(shapes)
    if assignment is None:
        text = text + ("" if text.endswith("\n") else "\n") + "\n" + block
    else:
        start, end = assignment
        text = "".join(lines[: start - 1]) + block + "".join(lines[end:])
    partial = task.with_name(f".{task.name}.partial")
    partial.write_text(text, encoding="utf-8")
    read_task(partial)  # the edit must leave a valid task, or the original stays
    partial.replace(task)
    return shapes


def _size_lines(envelope: Envelope, template: CallSignature) -> dict[tuple[int, int], Line | None]:
    """Per (argument, dimension) of the template's tensors: how its size follows the knobs
    over every verified cell (None: it varied, and no single knob explains it)."""
    cells = [
        (signature, knobs)
        for signature, knobs in zip(envelope.signatures, envelope.knobs)
        if _same_structure(signature, template)
    ]
    lines: dict[tuple[int, int], Line | None] = {}
    for arg, entry in enumerate(template.args):
        if not isinstance(entry, TensorSignature):
            continue
        for dim in range(len(entry.shape)):
            # Each cell has the template's structure: a tensor where the template has one.
            points = [
                (knobs, s.args[arg].shape[dim])  # type: ignore[union-attr]  # ^
                for s, knobs in cells
            ]
            sizes = {size for _, size in points}
            if len(sizes) == 1:
                lines[(arg, dim)] = (None, 0, sizes.pop())
                continue
            lines[(arg, dim)] = next(
                (
                    line
                    for knob in envelope.default_knobs
                    if (line := _fit(knob, points)) is not None
                ),
                None,
            )
    return lines


def _fit(knob: str, points: list[tuple[dict[str, int], int]]) -> Line | None:
    """``(knob, scale, offset)`` when every point's size is exactly scale * knob + offset."""
    values: dict[int, int] = {}
    for knobs, size in points:
        if knob not in knobs or values.setdefault(knobs[knob], size) != size:
            return None
    if len(values) < 2:
        return None
    line = integer_line(values)
    return None if line is None else (knob, line[0], line[1])


def _knobs_of(
    signature: CallSignature,
    template: CallSignature,
    lines: dict[tuple[int, int], Line | None],
    defaults: dict[str, int],
) -> tuple[dict[str, int] | None, str]:
    if len(signature.args) != len(template.args):
        return None, (
            f"{len(signature.args)} argument(s); the task's calls take {len(template.args)}"
        )
    implied: dict[str, int] = {}
    for arg, (entry, known) in enumerate(zip(signature.args, template.args)):
        if isinstance(known, ValueSignature) or isinstance(entry, ValueSignature):
            if entry != known:
                return None, (
                    f"argument {arg} is {entry.describe()}, not "
                    f"{known.describe()}: SHAPES sets sizes, not values"
                )
            continue
        if entry.dtype != known.dtype or entry.device != known.device:
            return None, (
                f"argument {arg} is {entry.dtype}@{entry.device}; the task's is "
                f"{known.dtype}@{known.device}: SHAPES cannot change a dtype"
            )
        if not entry.contiguous:
            return None, (
                f"argument {arg} is not contiguous: SHAPES sets sizes, and layout "
                "variants run at the default shape only"
            )
        if len(entry.shape) != len(known.shape):
            return None, f"argument {arg} has rank {len(entry.shape)}, not {len(known.shape)}"
        for dim, size in enumerate(entry.shape):
            line = lines.get((arg, dim))
            if line is None:
                return None, (
                    f"argument {arg} dimension {dim} varied in the matrix with no "
                    "single knob: its size cannot be mapped to one"
                )
            knob, scale, offset = line
            if knob is None:
                if size != offset:
                    return None, (
                        f"argument {arg} dimension {dim} is {size}; every verified "
                        f"cell had {offset} and no knob moves it"
                    )
                continue
            value, rest = divmod(size - offset, scale)
            if rest or value < 1 or implied.setdefault(knob, value) != value:
                return None, (
                    f"argument {arg} dimension {dim} is {size}, which no value of "
                    f"{knob} gives ({scale} * {knob} + {offset})"
                )
    return {**defaults, **implied}, ""


def _same_structure(a: CallSignature, b: CallSignature) -> bool:
    if len(a.args) != len(b.args):
        return False
    for x, y in zip(a.args, b.args):
        if type(x) is not type(y):
            return False
        if (
            isinstance(x, TensorSignature)
            and isinstance(y, TensorSignature)
            and len(x.shape) != len(y.shape)
        ):
            return False
    return True


def _shapes_assignment(text: str) -> tuple[int, int] | None:
    """The first and last line of the module-level ``SHAPES = ...`` assignment."""
    for node in ast.parse(text).body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else ([node.target] if isinstance(node, ast.AnnAssign) else [])
        )
        if any(isinstance(t, ast.Name) and t.id == "SHAPES" for t in targets):
            return node.lineno, node.end_lineno or node.lineno
    return None


def _text(knobs: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in knobs.items())
