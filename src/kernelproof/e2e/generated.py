"""Sources generated from a trace: KernelBench tasks and candidates the ordinary pipeline runs.

- :func:`module_task`: the replaced module as a task, as a benchmark would pose it
  (contiguous inputs of the host's first call, sizes as knobs tied to constructor arguments);
- :func:`signatures_task`: the same module at exact call signatures (shape, dtype, strides);
- :func:`replay_task`: the module on the inputs the host really fed it (knob ``call``);
- :func:`host_candidate`: the host with the substitution, as a KernelBench candidate;
- :func:`soak_task`: the host's loop, one step per call (the candidate's twin is
  :func:`host_candidate` with ``soak=True``).

Every source embeds the host's text (so its own knobs are not the generated task's) and is
executed in workers only. Generated text is built from values the trusted tracer returned
(``repr`` of plain values) and paths the controller chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelproof.e2e.trace_record import TargetTrace
from kernelproof.schema.envelope import CallSignature, TensorSignature, ValueSignature

#: Knob names the generated tasks never take from a constructor parameter (they would clash
#: with a generated name or with settings the task loader treats specially).
_RESERVED = frozenset({"call", "SEED", "DEBUG", "VERBOSE", "WARMUP", "ITERS", "torch", "Model"})


#: The index knobs (``call`` of the replay task, ``signature`` of the signatures task) are
#: this plus the index: the matrix treats a knob more than twice its default as a stress size
#: (compared without the oracle), so the default cannot be 0.
CALL_BASE = 1000


@dataclass(frozen=True)
class HostFiles:
    """The host's text and path, embedded into every generated source."""

    path: Path
    text: str

    def prelude(self) -> str:
        return (
            "import torch\n"
            "from kernelproof.e2e import host_runtime as _kp\n"
            f"_HOST_SOURCE = {self.text!r}\n"
            f"_HOST = _kp.load_host(_HOST_SOURCE, {str(self.path)!r})\n"
        )


def _target_class(trace: TargetTrace) -> str:
    if trace.class_module == "host":
        return f"_HOST.{trace.class_name}"
    return f"__import__('importlib').import_module({trace.class_module!r}).{trace.class_name}"


def _stateful_model(trace: TargetTrace, instance_expression: str) -> str:
    """``Model``: the target class built from the arguments, holding the host instance's state
    where shapes agree (so the isolated check runs with the weights the host really has; a
    shape variant of a constructor size keeps its own initialisation). The record is read
    when ``Model`` is built, which only the reference worker does."""
    return (
        f"_TARGET = {_target_class(trace)}\n\n\n"
        "def _record():\n"
        f"    return torch.load({trace.calls_file!r}, weights_only=True)\n\n\n"
        "def Model(*init_inputs):\n"
        "    model = _TARGET(*init_inputs)\n"
        f"    state = _record()['states'][{instance_expression}]\n"
        "    own = model.state_dict()\n"
        "    if all(k in state and not t.is_meta and t.shape == state[k].shape\n"
        "           for k, t in own.items()):\n"
        "        model.load_state_dict(state)\n"
        "    return model\n"
    )


def module_task(host: HostFiles, trace: TargetTrace) -> str:
    """The replaced module as a KernelBench task, posed as a benchmark would pose it: random
    contiguous inputs with the shapes and dtypes of the host's first call, every size a knob,
    sizes equal to a constructor argument tied to it (``hidden`` sizes both)."""
    first = trace.instances[0]
    signature = trace.signatures[0]
    knobs: dict[str, int] = {}
    init_parts: list[str] = []
    by_value: dict[int, str] = {}
    for position, value in enumerate(first.init_args):
        name = (
            trace.init_parameters[position]
            if position < len(trace.init_parameters)
            else f"init{position}"
        )
        if (
            type(value) is int
            and value > 1
            and name.isidentifier()
            and not name.startswith("_")
            and name not in _RESERVED
            and name not in knobs
        ):
            knobs[name] = value
            by_value.setdefault(value, name)
            init_parts.append(name)
        else:
            init_parts.append(repr(value))
    input_parts = []
    for position, arg in enumerate(signature.args):
        if isinstance(arg, ValueSignature):
            input_parts.append(repr(arg.value))
            continue
        sizes = []
        for dim, size in enumerate(arg.shape):
            if size <= 1:
                sizes.append(str(size))
            elif size in by_value:
                sizes.append(by_value[size])
            else:
                name = f"input{position}_dim{dim}"
                knobs[name] = size
                sizes.append(name)
        shape = "(" + "".join(f"{s}, " for s in sizes) + ")"
        input_parts.append(
            f"_kp.tensor_in_order({shape}, {tuple(range(len(arg.shape)))!r}, {arg.dtype!r})"
        )
    lines = [
        f'"""Generated by kernelproof e2e: {trace.class_name} ({first.path} in host '
        f"{host.path.name}) as a task, with random contiguous inputs shaped like the host's "
        'first call."""\n',
        host.prelude(),
        *(f"{name} = {value}\n" for name, value in knobs.items()),
        _stateful_model(trace, repr(first.path)),
        f"\n\ndef get_init_inputs():\n    return [{', '.join(init_parts)}]\n",
        f"\n\ndef get_inputs():\n    return [{', '.join(input_parts)}]\n",
    ]
    return "".join(lines)


def signatures_task(
    host: HostFiles, trace: TargetTrace, signatures: list[tuple[CallSignature, str]]
) -> str:
    """The module at exact call signatures the host used and the isolated matrix did not
    cover: the knob ``signature`` (``CALL_BASE + index``, listed in ``SHAPES``) picks one,
    with its shapes, dtypes and strides and the constructor arguments (a list literal) of the
    instance that made the call. One verification checks them all."""
    inputs, inits = [], []
    for signature, init_repr in signatures:
        parts = []
        for arg in signature.args:
            if isinstance(arg, TensorSignature):
                parts.append(
                    f"lambda: _kp.tensor_with_strides({arg.shape!r}, {arg.strides!r}, "
                    f"{arg.dtype!r})"
                )
            else:
                parts.append(f"lambda: {arg.value!r}")
        inputs.append("[" + ", ".join(parts) + "]")
        inits.append(init_repr)
    shapes = [{"signature": CALL_BASE + index} for index in range(1, len(signatures))]
    first = trace.instances[0]
    return "".join(
        [
            f'"""Generated by kernelproof e2e: {trace.class_name} at {len(signatures)} call '
            'signature(s) of the host outside the isolated matrix."""\n',
            host.prelude(),
            f"signature = {CALL_BASE}\n",
            f"SHAPES = {shapes!r}\n",
            "_INPUTS = [\n" + "".join(f"    {i},\n" for i in inputs) + "]\n",
            "_INITS = [\n" + "".join(f"    {i},\n" for i in inits) + "]\n",
            _stateful_model(trace, repr(first.path)),
            f"\n\ndef get_init_inputs():\n    return list(_INITS[signature - {CALL_BASE}])\n",
            "\n\ndef get_inputs():\n"
            f"    return [make() for make in _INPUTS[signature - {CALL_BASE}]]\n",
        ]
    )


def replay_task(host: HostFiles, trace: TargetTrace) -> str:
    """The module on the inputs the reference host fed it, one recorded call per value of the
    knob ``call`` (``CALL_BASE + index``, listed in ``SHAPES``), each with its instance's
    arguments and state."""
    shapes = [{"call": CALL_BASE + index} for index in range(1, trace.recorded_calls)]
    record = f"_record()['calls'][call - {CALL_BASE}]"
    return "".join(
        [
            f'"""Generated by kernelproof e2e: {trace.class_name} replayed on the {trace.recorded_calls} '
            f'calls the reference host made first (host {host.path.name})."""\n',
            host.prelude(),
            f"call = {CALL_BASE}\n",
            f"SHAPES = {shapes!r}\n",
            _stateful_model(trace, f"{record}['path']"),
            f"\n\ndef get_init_inputs():\n    return list(_record()['init'][{record}['path']])\n",
            "\n\ndef get_inputs():\n"
            "    return [a.clone() if isinstance(a, torch.Tensor) else a\n"
            f"            for a in {record}['args']]\n",
        ]
    )


def host_candidate(
    host: HostFiles, replacements: list[tuple[str, Path]], *, soak_seed: int | None = None
) -> str:
    """The host with each target replaced by its candidate's ``ModelNew``, as a KernelBench
    candidate: ``ModelNew(*init_inputs)`` builds the host and substitutes. With ``soak_seed``,
    it is the host's loop instead, one step per call (the twin of :func:`soak_task`)."""
    imports = "".join(
        f"_CANDIDATE_{index} = _import_file({str(path)!r}, 'kernelproof_e2e_candidate_{index}')\n"
        for index, (_, path) in enumerate(replacements)
    )
    table = ", ".join(
        f"({target!r}, _CANDIDATE_{index}.ModelNew)"
        for index, (target, _) in enumerate(replacements)
    )
    build = "_kp.build_substituted(_HOST, init_inputs, _REPLACEMENTS)"
    if soak_seed is not None:
        build = f"_kp.SoakHost(_HOST, {build}, {soak_seed})"
    return "".join(
        [
            f'"""Generated by kernelproof e2e: host {host.path.name} with '
            f'{", ".join(t for t, _ in replacements)} replaced by the candidate."""\n',
            host.prelude(),
            "from kernelproof.tasks.module import import_file as _import_file\n",
            imports,
            f"_REPLACEMENTS = [{table}]\n\n\n",
            "class ModelNew(torch.nn.Module):\n"
            '    """Not a class of its own: constructing it builds the host with the substitution\n'
            '    (so its state names are the host\'s)."""\n\n'
            "    def __new__(cls, *init_inputs):\n"
            f"        return {build}\n",
        ]
    )


def soak_task(host: HostFiles, seed: int) -> str:
    """The host's loop as a task: each call runs the next step (its index is the input)."""
    return "".join(
        [
            f'"""Generated by kernelproof e2e: the loop of host {host.path.name}, one step per '
            'call."""\n',
            host.prelude(),
            "\n\ndef Model(*init_inputs):\n"
            f"    return _kp.SoakHost(_HOST, _HOST.Model(*init_inputs), {seed})\n",
            "\n\ndef get_init_inputs():\n    return list(_HOST.get_init_inputs())\n",
            "\n\ndef get_inputs():\n    return _kp.step_marker()\n",
        ]
    )
