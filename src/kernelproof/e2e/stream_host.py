"""The trusted side of the substituted stream: the host (no candidate) runs its default call,
and each of the first calls to a replaced module is answered by the controller with the
candidate's output, so the host computes what it would with the substitution.

Run as ``python -m kernelproof.e2e.stream_host REQUEST.json`` by
:func:`kernelproof.e2e.stream.stream_attribution`. At each answered call it writes the call's
arguments to a file and one JSON line ``{"target", "call", "path", "file"}`` to its protocol
stream (the original stdout; the host's own prints go to stderr), then reads one JSON line:
``{"file": ...}`` (the outputs to return, a list of tensors) or ``{"stop": true}``. It ends
with ``{"done": true}`` or ``{"error": ...}``. The candidate never runs here: its outputs
arrive as tensors the controller got from the sandboxed candidate worker.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO

import torch

from kernelproof.e2e.host_runtime import find_targets, load_host
from kernelproof.e2e.trace_record import TraceRequest
from kernelproof.e2e.tracer import build_model
from kernelproof.tasks.inputs import build_inputs
from kernelproof.tasks.source import parse_task


class _Stop(Exception):
    """The controller has what it needs."""


class _Answered:
    """Wraps one instance's ``forward``: the first ``limit`` calls to its target (counted
    over all the target's instances) are answered by the controller."""

    def __init__(self, protocol: TextIO, out_dir: Path, limit: int) -> None:
        self.protocol, self.out_dir, self.limit = protocol, out_dir, limit
        self.counts: dict[int, int] = {}

    def wrap(self, position: int, path: str, module: torch.nn.Module) -> None:
        original = module.forward

        def forward(*args: Any, **kwargs: Any) -> Any:
            call = self.counts.get(position, 0)
            self.counts[position] = call + 1
            if call >= self.limit:
                return original(*args, **kwargs)
            arguments = list(args) + [kwargs[k] for k in sorted(kwargs)]
            file = self.out_dir / f"stream_t{position}_c{call}_in.pt"
            torch.save(
                [a.detach().cpu() if isinstance(a, torch.Tensor) else a for a in arguments], file
            )
            self.protocol.write(
                json.dumps({"target": position, "call": call, "path": path, "file": str(file)})
                + "\n"
            )
            self.protocol.flush()
            answer = json.loads(sys.stdin.readline() or '{"stop": true}')
            if answer.get("stop"):
                raise _Stop
            outputs = torch.load(answer["file"], weights_only=True)
            device = next((a.device for a in arguments if isinstance(a, torch.Tensor)), None)
            outputs = [o.to(device) if device is not None else o for o in outputs]
            return outputs[0] if len(outputs) == 1 else tuple(outputs)

        module.forward = forward


def run(request: TraceRequest, protocol: TextIO) -> None:
    """The host's default call (first run, first variant), with answered target calls."""
    task = parse_task(request.host_source, request.host_path)
    dtype = getattr(torch, request.dtype) if request.dtype else None
    first = request.runs[0]
    host = load_host(task.render(first.knobs), request.host_path)
    model, _ = build_model(host, request.init_seed, request.device, dtype)
    answered = _Answered(protocol, Path(request.out_dir), request.recorded_calls)
    for position, target in enumerate(request.targets):
        for path, module in find_targets(model, target):
            answered.wrap(position, path, module)
    inputs = build_inputs(host, first.variants[0], device=request.device, dtype=dtype)
    try:
        with torch.no_grad():
            model(*inputs)
    except _Stop:
        pass


def main(argv: list[str]) -> int:
    protocol, sys.stdout = sys.stdout, sys.stderr  # the host's prints stay off the protocol
    request = TraceRequest.model_validate_json(Path(argv[0]).read_text())
    try:
        run(request, protocol)
        reply: dict[str, Any] = {"done": True}
    except Exception as exc:  # noqa: BLE001 - the host's failure travels back as a value
        last = traceback.extract_tb(exc.__traceback__)[-1]
        reply = {
            "error": f"{type(exc).__name__}: {exc} (at {Path(last.filename).name}:{last.lineno})"[
                :400
            ]
        }
    protocol.write(json.dumps(reply) + "\n")
    protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
