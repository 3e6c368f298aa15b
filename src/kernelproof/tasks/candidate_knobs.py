"""The task's knobs that a candidate's own module copies, and re-rendering them there.

A KernelBench candidate usually copies the reference's module constants (``batch_size = 10``)
and may size a buffer from them in ``__init__`` (``torch.randn(num_layers, batch_size, ...)``,
as KernelBench's L3/33, L3/36 and L3/41 references do). The reference's module is re-rendered
at each shape; if the candidate's copy stayed as written, a candidate identical to the
reference would fail at every other shape and be reported as a limitation it does not have. So
the same knobs are re-rendered in the candidate's module, where it defines them with the
reference's name and default value, **while its model is constructed**: a model is built for
its shape.

The calls see the module as written. A ``forward`` that reads a copied knob depends on a
constant that, imported once in production, never changes: re-rendered for the calls too, a
kernel whose grid is sized from ``batch_size`` would be handed each shape's size and its
hard-coding would pass (examples/formats/knobs/linear_relu_copied_knobs.py). No published
KernelBench reference reads a knob in ``forward``. A size written as a literal is not a knob
either: a real limitation, which the matrix reports.

:func:`shared_knobs` is pure parsing (the controller uses it for the report's line);
:func:`rerender_module` runs in the candidate worker only, where candidate code runs anyway.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from kernelproof import python_ast
from kernelproof.schema.checks import FindingCheck
from kernelproof.schema.finding import Finding
from kernelproof.schema.verdict import Severity
from kernelproof.tasks.loaded import LoadedTask
from kernelproof.tasks.source import TaskSource, parse_knobs


def shared_knobs(task: TaskSource, candidate_text: str) -> dict[str, int]:
    """The task's knobs that the candidate's module also defines at module level with the
    same default value (a copy of the task's constants), by name; empty when it does not
    parse."""
    try:
        tree = python_ast.parse(candidate_text)
    except (SyntaxError, ValueError):
        return {}
    own = parse_knobs(tree)
    return {
        name: knob.value
        for name, knob in own.items()
        if name in task.knobs and task.knobs[name].value == knob.value
    }


def imported_source(loaded: LoadedTask) -> str:
    """The text of the file the candidate's worker imports (and re-renders): the candidate
    itself, or the wrapper a format generated around it (GPU MODE, an e2e host); empty when
    it cannot be read."""
    if loaded.candidate_path.resolve() == loaded.candidate_file.resolve():
        return loaded.candidate_text
    try:
        return loaded.candidate_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def candidate_knob_findings(task: TaskSource, candidate_text: str) -> list[Finding]:
    """The report's line saying which of the task's knobs the candidate's module copies, and
    that each shape sets them in both modules; none when it copies none."""
    shared = shared_knobs(task, candidate_text)
    if not shared:
        return []
    names = ", ".join(f"`{name}`" for name in shared)
    return [
        Finding(
            check=FindingCheck.CANDIDATE_KNOBS,
            severity=Severity.INFO,
            message=f"the candidate's module defines the task's knob(s) {names} with the "
            "reference's default values; each shape sets them there while the candidate's "
            "model is constructed, as in the reference's module, so sizes its constructor "
            "derives from them follow the shape (its calls see the values as written, and "
            "a size written as a literal does not follow)",
            evidence={"knobs": shared},
        )
    ]


@contextmanager
def rendered_for_construction(
    module: types.ModuleType, source: str, knobs: dict[str, int], shared: Iterable[str]
) -> Iterator[None]:
    """``module`` re-rendered at ``knobs`` (see :func:`rerender_module`) inside the block, and
    back to its written values after it, also when the block raises."""
    names = list(shared)
    rerender_module(module, source, knobs, names)
    try:
        yield
    finally:
        rerender_module(module, source, {}, names)


def rerender_module(
    module: types.ModuleType, source: str, knobs: dict[str, int], shared: Iterable[str]
) -> None:
    """Give ``module`` (executed from ``source``) the knob values ``knobs`` for every name in
    ``shared``, defaults for the rest of ``shared``, and re-run the module-level assignments
    that derive from them (``bias_shape = (out_channels, 1, 1)``), in source order, as
    re-rendering the source would. Functions and classes read these globals when called, so
    a model constructed afterwards sees the new sizes; kernels are not rebuilt."""
    tree = python_ast.parse(source)
    own = parse_knobs(tree)
    names = [name for name in shared if name in own]
    if not names:
        return
    target = {name: int(knobs.get(name, own[name].value)) for name in names}
    if all(module.__dict__.get(name) == value for name, value in target.items()):
        return  # already rendered at these values: derived code (a kernel build) is not rerun
    module.__dict__.update(target)
    knob_lines = {own[name].line for name in names}
    changed = set(names)
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        if node.lineno in knob_lines and _assigns_only(node, changed):
            continue
        reads = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        if not reads & changed:
            continue
        code = compile(
            ast.Module(body=[node], type_ignores=[]),
            getattr(module, "__file__", "<candidate>") or "<candidate>",
            "exec",
        )
        exec(code, module.__dict__)  # the candidate's own line, in its worker
        changed |= _targets(node)


def _assigns_only(node: ast.Assign | ast.AnnAssign, names: set[str]) -> bool:
    return _targets(node) <= names


def _targets(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
