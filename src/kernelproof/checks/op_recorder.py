"""Recording what actually ran during one call, inside a worker: aten ops and custom kernels.

Two sources, because neither sees everything:

* the torch profiler records every dispatcher op (aten and custom-registered ops), including
  those run by ``torch.compile``'d code, without changing how that code runs (a
  ``TorchDispatchMode`` would make Dynamo fall back to eager);
* a ``sys.setprofile`` hook sees calls the dispatcher never sees: pybind functions of C++
  extensions the candidate built (``load_inline``), numba-compiled functions (numba reports
  them as a call whose frame has no parent), Triton launches (``JITFunction.run``) and the
  kernels ``torch.compile`` generated (extension functions loaded from its cache).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import torch

from kernelproof.checks.op_policy import LIGHT_OPS

#: The recorder of the call in progress, for the hooks of threads that call started.
_ACTIVE: list[OpRecorder | None] = [None]


def _thread_hook(frame: FrameType, event: str, arg: Any) -> None:
    """The profile hook of a thread started during a recorded call: records into the active
    recorder, and removes itself from its thread once no call is recorded (a pool that
    outlives the call then runs unhooked, at full speed, while timed)."""
    recorder = _ACTIVE[0]
    if recorder is None:
        sys.setprofile(None)
        return
    recorder._hook(frame, event, arg)


#: Profiler events that are bookkeeping, not computation.
PROFILER_MARKERS = (
    "TorchDynamo",
    "Torch-Compiled Region",
    "Pregraph",
    "AOTDispatcher",
    "## Call CompiledFxGraph",
    "ProfilerStep",
    "[memory]",
    "cudaDeviceSynchronize",
)

#: ``__module__`` values of C functions that are not extension modules.
NOT_EXTENSIONS = frozenset({"builtins", "__main__", ""})

#: Files whose ``run`` method launches a Triton kernel (compiled or interpreted).
TRITON_LAUNCHERS = ("triton/runtime/jit.py", "triton/runtime/interpreter.py")

#: Dtype names the profiler reports for reduced-precision floating inputs.
LOW_PRECISION = frozenset({"c10::Half", "c10::BFloat16", "c10::Float8_e4m3fn", "c10::Float8_e5m2"})

#: Dtype names the profiler reports for floating inputs (float64 is ``double``).
FLOATING = LOW_PRECISION | {"float", "double"}

#: torch.ScalarType codes the profiler reports for a cast's target dtype (Half, BFloat16, fp8).
LOW_PRECISION_SCALAR_TYPES = frozenset({5, 15, 23, 24})


def _library_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["stdlib"], *site.getsitepackages()}
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


@dataclass
class OpRecorder:
    """Context manager recording one call. ``summary()`` is JSON-serialisable."""

    working_dtype: torch.dtype | None = None
    library_roots: tuple[str, ...] = field(default_factory=_library_roots)
    custom: Counter[str] = field(default_factory=Counter)
    aten: Counter[str] = field(default_factory=Counter)
    leaves: Counter[str] = field(default_factory=Counter)
    low_precision: Counter[str] = field(default_factory=Counter)
    widened: Counter[str] = field(default_factory=Counter)
    """Ops that ran on float64 inputs alone where the task's dtype is float32: the reference's
    op at double width is a different, slower kernel (DGEMM for SGEMM), not its work."""
    compiled: bool = False
    hook_removed: bool = False
    _profiler: Any = None
    _previous_hook: Any = None
    _installed_hook: Any = None
    _extension_paths: dict[str, str] = field(default_factory=dict)

    def __enter__(self) -> OpRecorder:
        self._profiler = torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            record_shapes=True,
        )
        self._profiler.__enter__()
        self._previous_hook = sys.getprofile()
        self._installed_hook = self._hook  # one bound-method object, so identity can be checked
        sys.setprofile(self._installed_hook)
        # Threads the call starts (a per-call pool joined before it returns) run its kernels
        # too: they get a hook that records into whichever recorder is active.
        _ACTIVE[0] = self
        threading.setprofile(_thread_hook)
        return self

    def __exit__(self, *exc: object) -> None:
        # A candidate that removed our hook mid-call hid its kernels from us: say so.
        self.hook_removed = sys.getprofile() is not self._installed_hook
        sys.setprofile(self._previous_hook)
        threading.setprofile(None)  # type: ignore[arg-type,unused-ignore]  # typeshed: the hook is not Optional on every Python
        _ACTIVE[0] = None
        self._profiler.__exit__(None, None, None)
        for event in self._profiler.events():
            self._on_event(event)

    def summary(self) -> dict[str, Any]:
        return {
            "aten": dict(self.aten),
            "leaves": dict(self.leaves),
            "custom": dict(self.custom),
            "low_precision": dict(self.low_precision),
            "widened": dict(self.widened),
            "compiled": self.compiled,
            "hook_removed": self.hook_removed,
        }

    def _on_event(self, event: Any) -> None:
        name = event.name
        if name.startswith(PROFILER_MARKERS):
            self.compiled = self.compiled or name.startswith("Torch-Compiled Region")
            return
        if "::" not in name:
            return
        self.aten[name] += 1
        children = getattr(event, "cpu_children", None) or []
        if not any("::" in child.name and child.name not in LIGHT_OPS for child in children):
            # A leaf of the compute tree: the op that did the work (its children, if any, only
            # move or view data). ``aten::softmax`` decomposes into ``aten::_softmax``, and a
            # candidate calling the latter directly does the same work.
            self.leaves[name] += 1
        if self.working_dtype in (torch.float32, torch.float64):
            dtypes = set(getattr(event, "input_dtypes", None) or ())
            concrete: Sequence[Any] = getattr(event, "concrete_inputs", None) or ()
            narrowing_cast = (
                name == "aten::_to_copy"
                and len(concrete) > 1
                and (concrete[1] in LOW_PRECISION_SCALAR_TYPES)
            )
            if narrowing_cast or (dtypes & LOW_PRECISION and name != "aten::_to_copy"):
                self.low_precision[name] += 1
            if self.working_dtype == torch.float32 and dtypes & FLOATING == {"double"}:
                self.widened[name] += 1

    # The hook runs for every Python and C call during the candidate's call: keep it cheap.
    def _hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call":
            module_name = getattr(arg, "__module__", None)
            if isinstance(module_name, str) and self._is_extension(module_name):
                kind = "inductor" if "inductor" in self._extension_paths[module_name] else "cpp"
                self.custom[f"{kind}:{module_name}.{getattr(arg, '__name__', '?')}"] += 1
        elif event == "call":
            code = frame.f_code
            if (
                frame.f_back is None
                and "numba" in sys.modules
                and not (code.co_filename.startswith(self.library_roots))
            ):
                self.custom[f"numba:{code.co_name}"] += 1
            elif code.co_name == "run" and code.co_filename.endswith(TRITON_LAUNCHERS):
                launched = frame.f_locals.get("self")
                fn = getattr(launched, "fn", None)
                self.custom[f"triton:{getattr(fn, '__name__', type(launched).__name__)}"] += 1

    def _is_extension(self, module_name: str) -> bool:
        """Whether a C function's module is a compiled extension built outside the Python
        installation: by the candidate (``load_inline`` does not register its module in
        ``sys.modules``, so an unregistered module counts) or by torch.compile in its cache."""
        if module_name not in self._extension_paths:
            module = sys.modules.get(module_name)
            if module is None:
                # load_inline does not register its module; a library's pseudo-module
                # (``torch._ops.aten``) is not registered either, but its package is.
                package = sys.modules.get(module_name.split(".")[0])
                package_path = getattr(package, "__file__", None) or ""
                custom = module_name not in NOT_EXTENSIONS and not (
                    package_path.startswith(self.library_roots)
                )
                path = f"<unregistered {module_name}>"
            else:
                path = getattr(module, "__file__", None) or ""
                custom = path.endswith((".so", ".pyd")) and not path.startswith(self.library_roots)
            self._extension_paths[module_name] = path if custom else ""
        return bool(self._extension_paths[module_name])
