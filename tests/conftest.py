"""Shared fixtures. Verifications are expensive, so reports are computed once per session and
shared by every test that asserts on them; build caches live inside the project."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

for _name, _folder in {
    "TORCH_EXTENSIONS_DIR": "torch_extensions",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor",
    "NUMBA_CACHE_DIR": "numba",
    "TRITON_CACHE_DIR": "triton",
    "KERNELPROOF_CACHE_DIR": "kernelproof",
}.items():
    os.environ.setdefault(_name, str(ROOT / ".cache" / _folder))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` skip themselves where no CUDA device is present, so no test needs
    its own ``skipif``. torch is imported only when some collected test is marked ``gpu``."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="marked gpu: needs a CUDA device, and none is present")
    for item in gpu_items:
        item.add_marker(skip)


#: Settings for example verifications in tests: fewer seeds keep the suite fast; the seed is
#: fixed so a failure reproduces. The out-of-process stack sampler adds ~1.5 s to each of
#: hundreds of verifications; tests/hacks/test_verifier_attacks.py and
#: tests/checks/test_native_stacks.py turn it on where it is the point.
TEST_SETTINGS: dict[str, Any] = {
    "seeds": 3,
    "base_seed": 1234,
    "timing": False,
    "native_audit": False,
}


def reference_of(candidate: Path) -> Path:
    """The reference a candidate names in its ``# kernelproof-reference:`` header line, or the
    ``reference.py`` beside it."""
    for line in candidate.read_text().splitlines()[:5]:
        if line.startswith("# kernelproof-reference:"):
            return (candidate.parent / line.split(":", 1)[1].strip()).resolve()
    return candidate.parent / "reference.py"


@pytest.fixture(scope="session")
def examples() -> Path:
    return EXAMPLES


_REPORTS: dict[tuple[Any, ...], Any] = {}


#: Tasks whose reference answers and warm reference workers a test process keeps (each holds
#: up to two idle workers of a few hundred MB; two test processes run at once).
MEMO_TASKS = 4


@pytest.fixture(scope="session")
def verified() -> Iterator[Callable[..., Any]]:
    """``verified(candidate, reference=None, **settings)`` -> Report, cached per session.

    The verifications share the reference's answers and warm reference workers, as a
    :class:`kernelproof.Session` does (each candidate still gets a fresh worker, and the
    report is the one a separate ``verify`` with the same seed gives): most tests verify
    candidates of a handful of tasks, and the reference's work was half of each."""
    from kernelproof.controller.verify import verify
    from kernelproof.workers.reference_memo import TaskMemos

    memos = TaskMemos(capacity=MEMO_TASKS)

    def run(candidate: Path | str, reference: Path | str | None = None, **settings: Any) -> Any:
        candidate = Path(candidate)
        reference = Path(reference) if reference else reference_of(candidate)
        options = {**TEST_SETTINGS, **settings}
        key = (str(candidate), str(reference), tuple(sorted(options.items())))
        if key not in _REPORTS:
            _REPORTS[key] = verify(reference, candidate, memos=memos, **options)
        return _REPORTS[key]

    yield run
    memos.close()
