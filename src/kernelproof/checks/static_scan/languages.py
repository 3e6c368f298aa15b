"""Languages: which kernel languages a candidate uses, from imports, names and extension sources."""

from __future__ import annotations

import ast

from kernelproof.checks.static_scan.context import (
    Context,
    call_argument,
    has_prefix,
    string_constants,
)
from kernelproof.checks.static_scan.rules import (
    CUDA_SOURCE_MARKER,
    LANGUAGE_ROOTS,
    LANGUAGES,
    TORCH_COMPILE_NAMES,
)


def _is_empty_literal(node: ast.expr | None) -> bool:
    """``None``, ``""``, ``[]`` or ``()``: an argument that passes no sources."""
    if node is None:
        return True
    if isinstance(node, ast.Constant):
        return not node.value
    return isinstance(node, (ast.List, ast.Tuple)) and not node.elts


def _extension_languages(context: Context, call: ast.Call) -> set[str]:
    """Languages one ``load_inline``/``load`` call compiles: always C++, CUDA when it has CUDA."""
    found = {"cpp"}
    if "inline" in (context.resolve(call.func) or ""):
        if not _is_empty_literal(call_argument(call, "cuda_sources", 2)):
            found.add("cuda")
    else:
        sources = context.fold_list(call_argument(call, "sources", 1))
        if any(source.endswith((".cu", ".cuh")) for source in sources):
            found.add("cuda")
    return found


def detect_languages(context: Context) -> list[str]:
    """Languages the source uses, in ``LANGUAGES`` order."""
    names = {name for _, name in context.references()} | context.import_roots
    roots = {name.split(".")[0] for name in names}
    found = {language for language, root in LANGUAGE_ROOTS if root in roots}
    if "cupy" in roots or any(name.startswith("numba.cuda") for name in names):
        found.add("cuda")
    if any(has_prefix(name, TORCH_COMPILE_NAMES) for name in names):
        found.add("torch.compile")
    for call in context.extension_calls:
        found |= _extension_languages(context, call)
    if any(CUDA_SOURCE_MARKER.search(text) for _, text in string_constants(context)):
        found.add("cuda")
    return [language for language in LANGUAGES if language in found]
