"""Helpers the generated e2e sources call inside workers (and the trusted tracer).

Nothing here runs in the controller. In the candidate worker these helpers run next to the
candidate's code, so nothing they compute is believed: the controller compares the outputs
it receives, as for any candidate.
"""

from __future__ import annotations

import inspect
import itertools
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from kernelproof.tasks.module import module_from_source

_LOADED = itertools.count()


def load_host(source: str, path: str) -> types.ModuleType:
    """Execute a host task's source as a fresh module (its classes, ``get_inputs``...)."""
    return module_from_source(source, path, f"kernelproof_e2e_host_{next(_LOADED)}")


def module_classes(host: types.ModuleType) -> list[type]:
    """Every ``nn.Module`` class the host can construct: its own and ``torch.nn``'s."""
    found: dict[int, type] = {}
    for namespace in (vars(host), vars(torch.nn)):
        for value in list(namespace.values()):
            if isinstance(value, type) and issubclass(value, torch.nn.Module):
                found[id(value)] = value
    return list(found.values())


@contextmanager
def recorded_constructions(classes: Sequence[type]) -> Iterator[dict[int, tuple[tuple, dict]]]:
    """Record the arguments each module instance is constructed with, keyed by ``id``.

    Every class that defines its own ``__init__`` gets it wrapped for the duration; the outermost
    call for an instance wins, which is the most derived class's (it runs first and calls
    ``super().__init__`` later)."""
    records: dict[int, tuple[tuple, dict]] = {}
    patched: list[tuple[type, Callable[..., None]]] = []

    def wrap(original: Callable[..., None]) -> Callable[..., None]:
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            records.setdefault(id(self), (args, kwargs))
            original(self, *args, **kwargs)

        # What inspect reads to show the original's signature (functions take any attribute).
        __init__.__wrapped__ = original  # type: ignore[attr-defined]  # see above
        __init__.__signature__ = inspect.signature(original)  # type: ignore[attr-defined]  # idem
        return __init__

    for cls in classes:
        original = cls.__dict__.get("__init__")
        if original is None or not callable(original):
            continue
        try:
            cls.__init__ = wrap(original)  # type: ignore[misc]  # the trace wraps each class's own __init__
        except TypeError:  # a class that forbids attribute assignment
            continue
        patched.append((cls, original))
    try:
        yield records
    finally:
        for cls, original in patched:
            cls.__init__ = original  # type: ignore[misc]  # restored as it was


def positional_arguments(module: torch.nn.Module, args: tuple, kwargs: dict) -> list[Any]:
    """The constructor arguments of ``module`` as one positional list (defaults filled in), so
    that ``ModelNew(*arguments)`` receives exactly what the replaced module did."""
    signature = inspect.signature(type(module).__init__)
    bound = signature.bind(module, *args, **kwargs)
    bound.apply_defaults()
    positional: list[Any] = []
    for name, parameter in list(signature.parameters.items())[1:]:
        value = bound.arguments.get(name, parameter.default)
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            positional.extend(value)
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            if value:
                raise TypeError(
                    f"{type(module).__name__} was built with keyword arguments "
                    f"{sorted(value)} that cannot be passed positionally"
                )
        elif parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            if value is not parameter.default:
                raise TypeError(
                    f"{type(module).__name__} was built with the keyword-only "
                    f"argument {name}={value!r}, which KernelBench's "
                    "ModelNew(*init_inputs) cannot receive"
                )
        else:
            positional.append(value)
    return positional


def find_targets(model: torch.nn.Module, target: str) -> list[tuple[str, torch.nn.Module]]:
    """The submodules a target names: a dotted path (``layers.0.norm``) names one; a class
    name (``RMSNorm``) names every instance of that class. Raises a clear error otherwise."""
    named = dict(model.named_modules())
    if target in named and target:
        return [(target, named[target])]
    by_class = [
        (path, module) for path, module in named.items() if path and type(module).__name__ == target
    ]
    if by_class:
        return by_class
    classes = sorted({type(m).__name__ for p, m in named.items() if p})
    paths = [p for p in named if p][:12]
    raise LookupError(
        f"the host has no submodule path or module class named {target!r}; "
        f"its classes are {', '.join(classes)}; paths include {', '.join(paths)}"
    )


def substitute(
    model: torch.nn.Module,
    target: str,
    factory: Callable[..., torch.nn.Module],
    records: dict[int, tuple[tuple, dict]],
) -> list[str]:
    """Replace every submodule ``target`` names by ``factory(*its constructor arguments)``
    holding its state; returns the replaced paths. Mismatches raise with both signatures."""
    replaced = []
    for path, original in find_targets(model, target):
        args, kwargs = records.get(id(original), ((), {}))
        arguments = positional_arguments(original, args, kwargs)
        described = f"{type(original).__name__}{inspect.signature(type(original).__init__)}"
        try:
            new = factory(*arguments)
        except TypeError as exc:
            raise TypeError(
                f"ModelNew{_signature_text(factory)} cannot take the constructor "
                f"arguments {arguments!r} of {described} at {path!r}: {exc}"
            ) from None
        state = original.state_dict()
        result = new.load_state_dict(state, strict=False)
        if result.missing_keys or result.unexpected_keys:
            raise TypeError(
                f"ModelNew's state does not match {described} at {path!r}: ModelNew lacks "
                f"{sorted(result.unexpected_keys)} and has {sorted(result.missing_keys)} the "
                f"replaced module does not; name its parameters and buffers as the module does"
            )
        new.train(original.training)
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path) if parent_path else model
        setattr(parent, name, new)
        replaced.append(path)
    return replaced


def _signature_text(factory: Any) -> str:
    try:
        return str(inspect.signature(factory))
    except (TypeError, ValueError):
        return "(...)"


def build_substituted(
    host: types.ModuleType,
    init_inputs: Sequence[Any],
    replacements: Sequence[tuple[str, Callable[..., torch.nn.Module]]],
) -> torch.nn.Module:
    """The host's ``Model(*init_inputs)`` with each target replaced by its factory."""
    with recorded_constructions(module_classes(host)) as records:
        model = host.Model(*init_inputs)
    for target, factory in replacements:
        substitute(model, target, factory, records)
    return model


def tensor_in_order(shape: Sequence[int], order: Sequence[int], dtype: str) -> torch.Tensor:
    """A random tensor of ``shape`` laid out densely with dimension ``order[0]`` outermost:
    ``order = range(n)`` is contiguous; a permutation gives the matching permuted view."""
    kind = getattr(torch, dtype)
    storage_shape = [shape[d] for d in order]
    if kind.is_floating_point:
        dense = torch.randn(storage_shape, dtype=kind)
    elif kind == torch.bool:
        dense = torch.rand(storage_shape) < 0.5
    else:
        dense = torch.randint(0, 8, storage_shape, dtype=kind)
    inverse = [0] * len(order)
    for position, dim in enumerate(order):
        inverse[dim] = position
    return dense.permute(inverse)


def tensor_with_strides(shape: Sequence[int], strides: Sequence[int], dtype: str) -> torch.Tensor:
    """A random tensor with exactly these strides (a gap in the storage is filled too)."""
    kind = getattr(torch, dtype)
    out = torch.empty_strided(tuple(shape), tuple(strides), dtype=kind)
    out.copy_(tensor_in_order(shape, range(len(shape)), dtype))
    return out


class SoakHost(torch.nn.Module):
    """Runs the host's loop one step per call, so that the ordinary ``run`` request (with its
    probes, oracle and transport) serves a soak.

    Each call receives the step's index (a one-element tensor: the generated task's
    ``get_inputs`` returns the seed it was built with) and returns that step's outputs. The
    loop is the host's ``soak_steps(model, inputs)`` generator, which receives each step's
    outputs back (``send``); without one, every step is fresh ``get_inputs()``. A call for the
    step just made (the candidate worker's warm-up call repeats the first) returns it again."""

    def __init__(self, host: types.ModuleType, model: torch.nn.Module, seed: int) -> None:
        super().__init__()
        self.model = model
        # Functions, not the module: the float64 oracle is a deep copy of this model, and a
        # module object cannot be copied (functions are shared by reference).
        self._get_inputs = host.get_inputs
        self._loop = getattr(host, "soak_steps", None)
        self._seed = seed
        self._steps: Any = None
        self._done = -1
        self._last: list[torch.Tensor] = []

    def forward(self, step: torch.Tensor) -> Any:
        index = int(step.reshape(-1)[0].item())
        if index == self._done:
            return tuple(t.clone() for t in self._last)
        if index != self._done + 1:
            raise RuntimeError(f"soak step {index} requested after step {self._done}")
        if self._steps is None:
            inputs = self._initial_inputs()
            self._steps = (
                self._loop(self.model, inputs)
                if self._loop is not None
                else self._fresh_steps(inputs)
            )
            step_inputs = next(self._steps)
        else:
            step_inputs = self._steps.send(tuple(self._last))
        outputs = self.model(*step_inputs)
        outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        self._last = [o for o in outputs if isinstance(o, torch.Tensor)]
        self._done = index
        return tuple(t.clone() for t in self._last)

    def _initial_inputs(self) -> list[Any]:
        state = torch.random.get_rng_state()
        torch.manual_seed(self._seed)
        try:
            inputs = list(self._get_inputs())
        finally:
            torch.random.set_rng_state(state)
        dtype = next((p.dtype for p in self.model.parameters() if p.is_floating_point()), None)
        device = next((p.device for p in self.model.parameters()), torch.device("cpu"))
        return [
            x.to(device=device, dtype=dtype)
            if isinstance(x, torch.Tensor) and x.is_floating_point() and dtype is not None
            else x
            for x in inputs
        ]

    def _fresh_steps(self, inputs: list[Any]) -> Iterator[list[Any]]:
        generator = torch.Generator().manual_seed(self._seed)
        while True:
            yield inputs
            inputs = [
                torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device)
                if isinstance(x, torch.Tensor) and x.is_floating_point()
                else x
                for x in inputs
            ]


def step_marker() -> list[torch.Tensor]:
    """The soak task's inputs: the index of the step, which is the seed the inputs were built
    with (:func:`kernelproof.tasks.inputs.seed_everything` seeds torch's generator with it)."""
    return [torch.tensor([float(torch.initial_seed())], dtype=torch.float64)]
