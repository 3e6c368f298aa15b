"""The trusted tracer: builds the host (no candidate) in its own process and records how it
uses the modules to be replaced.

Run as ``python -m kernelproof.e2e.tracer REQUEST.json RESULT.json`` by
:func:`kernelproof.e2e.trace_host`. The host is task code, trusted like a reference; a
candidate never runs here. Nothing is read from its stdout.
"""

from __future__ import annotations

import ast
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from kernelproof.e2e.host_runtime import (
    SoakHost,
    find_targets,
    load_host,
    module_classes,
    positional_arguments,
    recorded_constructions,
)
from kernelproof.e2e.trace_record import (
    InstanceTrace,
    TargetTrace,
    TraceRequest,
    TraceResult,
)
from kernelproof.schema.envelope import CallSignature
from kernelproof.tasks.inputs import build_inputs, seed_everything
from kernelproof.tasks.source import parse_task

#: Names of the profiler ranges around the host's calls and a target's outermost calls.
HOST_RANGE = "kernelproof.e2e.host"
TARGET_RANGE = "kernelproof.e2e.target"


class _CallLog:
    """Forward pre/post hooks on every target instance: signatures, recorded calls, time."""

    def __init__(
        self,
        traces: list[TargetTrace],
        instances: list[list[tuple[str, torch.nn.Module, str]]],
        recorded_calls: int,
    ) -> None:
        self.traces = traces
        self.indices: list[dict[CallSignature, int]] = [{} for _ in traces]
        self.source = ""
        self.recording = False
        self.recorded_calls = recorded_calls
        self.calls: list[list[dict[str, Any]]] = [[] for _ in traces]
        self.inside: list[float] = [0.0 for _ in traces]
        self.depth = 0
        self.entered = 0.0
        self.profiling = False
        self.range: Any = None
        self.handles = []
        for position, modules in enumerate(instances):
            for path, module, init in modules:
                self.handles.append(
                    module.register_forward_pre_hook(
                        self._before(position, path, init), with_kwargs=True
                    )
                )
                self.handles.append(module.register_forward_hook(self._after(position)))

    def _before(self, position: int, path: str, init: str) -> Any:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
            arguments = list(args) + [kwargs[k] for k in sorted(kwargs)]
            signature = CallSignature.of(arguments)
            trace, index = self.traces[position], self.indices[position]
            if signature not in index:
                index[signature] = len(trace.signatures)
                trace.signatures.append(signature)
                trace.signature_counts.append(0)
                trace.signature_sources.append(self.source)
                trace.signature_init.append(init)
            trace.signature_counts[index[signature]] += 1
            if self.recording and len(self.calls[position]) < self.recorded_calls:
                self.calls[position].append(
                    {
                        "path": path,
                        "args": [
                            a.detach().clone() if isinstance(a, torch.Tensor) else a
                            for a in arguments
                        ],
                    }
                )
            if self.depth == 0:
                if self.profiling:
                    self.range = torch.autograd.profiler.record_function(
                        f"{TARGET_RANGE}{position}"
                    )
                    self.range.__enter__()
                self.entered = time.perf_counter()
            self.depth += 1

        return hook

    def _after(self, position: int) -> Any:
        def hook(module: torch.nn.Module, args: tuple, output: Any) -> None:
            self.depth -= 1
            if self.depth == 0:
                self.inside[position] += time.perf_counter() - self.entered
                if self.range is not None:
                    self.range.__exit__(None, None, None)
                    self.range = None

        return hook


def trace(request: TraceRequest) -> TraceResult:
    """Run the host's variants (and soak steps) and record what the targets see."""
    task = parse_task(request.host_source, request.host_path)
    dtype = getattr(torch, request.dtype) if request.dtype else None
    result = TraceResult()
    out_dir = Path(request.out_dir)
    default_model = None
    log: _CallLog | None = None
    for run_index, run in enumerate(request.runs):
        host = load_host(task.render(run.knobs), request.host_path)
        model, records = build_model(host, request.init_seed, request.device, dtype)
        if run_index == 0:
            traces, instances = _targets(model, records, request.targets)
            result.targets = traces
            default_model = (host, model, records)
            log = _CallLog(traces, instances, request.recorded_calls)
        else:
            _, instances = _targets(model, records, request.targets)
            assert log is not None
            log = _relog(log, instances)
        for position, variant in enumerate(run.variants):
            log.source = variant.name
            log.recording = run_index == 0 and position == 0
            inputs = build_inputs(host, variant, device=request.device, dtype=dtype)
            try:
                with torch.no_grad():
                    model(*inputs)
            except Exception as exc:
                result.rejected.append(f"{variant.name}: {type(exc).__name__}: {exc}"[:300])
                if run_index == 0 and position == 0:
                    raise
        if run_index == 0:
            _profile(result, log, host, model, run.variants[0], request, dtype)
    assert default_model is not None and log is not None
    host, model, records = default_model
    if request.soak_steps:
        log = _relog(log, _targets(model, records, request.targets, traces=result.targets)[1])
        soak = SoakHost(host, model, request.init_seed)
        with torch.no_grad():
            for step in range(request.soak_steps):
                log.source = f"soak:{step}"
                soak(torch.tensor([float(step)]))
                result.soak_steps_run = step + 1
    _save_calls(result, log, model, out_dir)
    return result


def build_model(host: Any, init_seed: int, device: str, dtype: Any) -> tuple[Any, dict]:
    """The host's ``Model`` as the workers build it (same seed), with every module's
    constructor arguments recorded."""
    seed_everything(init_seed)
    init_inputs = list(host.get_init_inputs())
    seed_everything(init_seed)
    with recorded_constructions(module_classes(host)) as records:
        model = host.Model(*init_inputs)
    model = model.to(device)
    if dtype is not None:
        model = model.to(dtype)
    return model, records


def _targets(
    model: torch.nn.Module,
    records: dict,
    targets: list[str],
    traces: list[TargetTrace] | None = None,
) -> tuple[list[TargetTrace], list[list[tuple[str, torch.nn.Module, str]]]]:
    import inspect

    found, instances = [], []
    for target in targets:
        matches = find_targets(model, target)
        entries, described = [], []
        for path, module in matches:
            args, kwargs = records.get(id(module), ((), {}))
            arguments = positional_arguments(module, args, kwargs)
            text = repr(arguments)
            described.append((path, module, text))
            try:
                plain = ast.literal_eval(text) == arguments
            except (ValueError, SyntaxError):
                plain = False
            if not plain:
                raise TypeError(
                    f"{path} ({type(module).__name__}) was built with arguments "
                    f"that are not plain values ({text[:200]}); kernelproof can only "
                    "hand ints, floats, bools, strings and tuples of them to ModelNew"
                )
            entries.append(InstanceTrace(path=path, init_args=arguments, init_repr=text))
        instances.append(described)
        if traces is not None:
            continue
        first = type(matches[0][1])
        module_name = first.__module__
        found.append(
            TargetTrace(
                target=target,
                class_name=first.__name__,
                class_module="host"
                if module_name.startswith("kernelproof_e2e_host")
                else module_name,
                init_signature=f"{first.__name__}{inspect.signature(first.__init__)}",
                init_parameters=[
                    name
                    for name, p in list(inspect.signature(first.__init__).parameters.items())[1:]
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                ],
                instances=entries,
            )
        )
    return (traces if traces is not None else found), instances


def _relog(log: _CallLog, instances: list[list[tuple[str, torch.nn.Module, str]]]) -> _CallLog:
    """A log for another model of the same host, keeping what was recorded so far."""
    for handle in log.handles:
        handle.remove()
    fresh = _CallLog(log.traces, instances, log.recorded_calls)
    fresh.indices, fresh.calls = log.indices, log.calls
    return fresh


def _profile(
    result: TraceResult,
    log: _CallLog,
    host: Any,
    model: torch.nn.Module,
    variant: Any,
    request: TraceRequest,
    dtype: Any,
) -> None:
    """Median time of one host call, and each target's share of it: by the forward hooks (a
    median of per-call ratios: on a loaded machine a call's total and its inside time are
    slowed together, so their ratio is steadier than a ratio of medians) and by the profiler
    (:func:`_profiler_shares`), the figure Amdahl uses."""
    log.recording = False
    inputs = build_inputs(host, variant, device=request.device, dtype=dtype)
    totals: list[float] = []
    shares: list[list[float]] = [[] for _ in log.traces]
    with torch.no_grad():
        model(*inputs)  # warm
        for _ in range(request.profile_repeats):
            log.inside = [0.0 for _ in log.traces]
            started = time.perf_counter()
            model(*inputs)
            total = time.perf_counter() - started
            totals.append(total)
            for position, spent in enumerate(log.inside):
                shares[position].append(spent / total if total > 0 else 0.0)
    result.host_call_s = statistics.median(totals)
    result.target_hook_share = [statistics.median(s) for s in shares]
    try:
        result.target_profiler_share = _profiler_shares(log, model, inputs, request)
    except Exception as exc:  # noqa: BLE001 - the hooks' figure stands in, and the report says so
        result.profiler_error = f"{type(exc).__name__}: {exc}"[:300]
        result.target_profiler_share = [None for _ in log.traces]


def _profiler_shares(
    log: _CallLog, model: torch.nn.Module, inputs: list[Any], request: TraceRequest
) -> list[float | None]:
    """Each target's share of host time by ``torch.profiler``: the hooks open a
    ``record_function`` range around each target's outermost call, the host's calls get one
    too; a target's share is its ranges' total over the host's. On CUDA the ranges' device
    time (the kernels launched inside them) is what counts, since their CPU time is launches."""
    from torch.profiler import ProfilerActivity, profile, record_function

    cuda = request.device == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    log.profiling = True
    try:
        with torch.no_grad(), profile(activities=activities) as recorded:
            for _ in range(request.profile_repeats):
                with record_function(HOST_RANGE):
                    model(*inputs)
                if cuda:
                    torch.cuda.synchronize()
    finally:
        log.profiling = False

    def spent(event: Any) -> float:
        return float(event.device_time_total if cuda else event.cpu_time_total)

    totals: dict[str, float] = {}
    for event in recorded.events():
        if event.name == HOST_RANGE or event.name.startswith(TARGET_RANGE):
            totals[event.name] = totals.get(event.name, 0.0) + spent(event)
    host = totals.get(HOST_RANGE, 0.0)
    if host <= 0:
        raise RuntimeError("the profiler recorded no time for the host's calls")
    return [
        min(totals.get(f"{TARGET_RANGE}{position}", 0.0) / host, 1.0)
        for position in range(len(log.traces))
    ]


def _save_calls(result: TraceResult, log: _CallLog, model: torch.nn.Module, out_dir: Path) -> None:
    for position, trace in enumerate(result.targets):
        instances = {i.path: i for i in trace.instances}
        record = {
            "calls": log.calls[position],
            "states": {
                path: {
                    k: v.detach().clone() for k, v in model.get_submodule(path).state_dict().items()
                }
                for path in instances
            },
            "init": {path: instances[path].init_args for path in instances},
        }
        path = out_dir / f"target{position}_calls.pt"
        torch.save(record, path)
        trace.calls_file = str(path)
        trace.recorded_calls = len(log.calls[position])


def main(argv: list[str]) -> int:
    request_path, result_path = Path(argv[0]), Path(argv[1])
    request = TraceRequest.model_validate_json(request_path.read_text())
    try:
        result = trace(request)
    except Exception as exc:  # noqa: BLE001 - the host's failure travels back as a value
        last = traceback.extract_tb(exc.__traceback__)[-1]
        result = TraceResult(
            ok=False,
            error=f"{type(exc).__name__}: {exc} (at {Path(last.filename).name}:{last.lineno})",
        )
    result_path.write_text(result.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
