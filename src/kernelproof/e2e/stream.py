"""Attribution on the substituted host's own stream: the local error of the candidate at the
inputs the host gives it *with the substitution*, where an error made at one call has already
changed the inputs of the next.

The host runs in a trusted process (:mod:`kernelproof.e2e.stream_host`, host code only). At
each of its first calls to a replaced module it hands the call's arguments to the controller,
which runs them through the ordinary worker pair of the module's replay task (the module and
its float64 oracle in the reference worker, the candidate sandboxed), compares there, and
answers the host with the candidate's outputs. The candidate never runs in a trusted process,
and the comparison is the controller's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelproof.checks.tolerance import TolerancePolicy, compare_output
from kernelproof.config import Settings
from kernelproof.e2e.generated import CALL_BASE
from kernelproof.e2e.trace_record import TraceRequest
from kernelproof.paths import PACKAGE_DIR
from kernelproof.protocol.requests import RunRequest
from kernelproof.schema import InputVariant, VariantKind
from kernelproof.schema.e2e import CallAttribution
from kernelproof.tasks.loaded import LoadedTask
from kernelproof.tasks.saved_inputs import given_slots
from kernelproof.workers.pair import WorkerPair

#: Seconds the whole stream may take: one host call, with a worker round trip per answered
#: call (the tracer's limit, for the same host).
STREAM_TIMEOUT_S = 600.0


def trusted_environment() -> dict[str, str]:
    """The environment of a trusted host process (tracer, stream): this package importable,
    one intra-op thread (its timings are shares of one call)."""
    package_root = str(PACKAGE_DIR.parent)
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p),
    }


@dataclass
class StreamResult:
    """The substituted stream's calls, compared, and why it stopped early (if it did)."""

    calls: list[CallAttribution] = field(default_factory=list)
    note: str = ""


def stream_attribution(
    request: TraceRequest,
    tasks: list[LoadedTask | None],
    targets: list[str],
    settings: Settings,
    scratch: Path,
) -> StreamResult:
    """Run the host's default call with each replaced module's first ``recorded_calls``
    calls answered by the candidate; ``tasks[i]`` is target i's replay task with the
    candidate (None: not compared, the host's own module answers)."""
    request_path = scratch / "stream_request.json"
    request_path.write_text(request.model_dump_json())
    policy = TolerancePolicy.from_settings(settings)
    result = StreamResult()
    log = (scratch / "stream.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "kernelproof.e2e.stream_host", str(request_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=trusted_environment(),
    )
    watchdog = threading.Timer(STREAM_TIMEOUT_S, process.kill)
    watchdog.start()
    pairs: dict[int, WorkerPair] = {}
    try:
        with ExitStack() as stack:
            assert process.stdout is not None and process.stdin is not None
            for line in process.stdout:
                message = json.loads(line)
                if "done" in message or "error" in message:
                    result.note = message.get("error", "")
                    break
                position, call = int(message["target"]), int(message["call"])
                task = tasks[position]
                answer: dict[str, Any] = {"stop": True}
                if task is not None:
                    if position not in pairs:
                        pairs[position] = _start(stack, task, settings)
                    compared = _compare(
                        pairs[position],
                        call,
                        message,
                        request.init_seed,
                        policy,
                        targets[position],
                        scratch,
                    )
                    if isinstance(compared, str):
                        result.note = compared
                    else:
                        result.calls.append(compared[0])
                        answer = {"file": compared[1]}
                process.stdin.write(json.dumps(answer) + "\n")
                process.stdin.flush()
                if answer.get("stop"):
                    break
            else:
                result.note = result.note or "the host's stream process ended without a reply"
    except (OSError, ValueError, KeyError) as exc:
        result.note = f"the substituted stream stopped: {type(exc).__name__}: {exc}"[:300]
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
        process.wait()
        log.close()
    result.calls.sort(key=lambda c: (c.target, c.call))
    return result


def _start(stack: ExitStack, task: LoadedTask, settings: Settings) -> WorkerPair:
    pair = stack.enter_context(
        WorkerPair(
            task=task.task,
            candidate_path=task.candidate_path,
            settings=settings,
            readable_paths=task.readable_paths,
        )
    )
    pair.start_reference()
    pair.start_candidate()
    return pair


def _compare(
    pair: WorkerPair,
    call: int,
    message: dict[str, Any],
    init_seed: int,
    policy: TolerancePolicy,
    target: str,
    scratch: Path,
) -> tuple[CallAttribution, str] | str:
    """One answered call: both workers prepared at the recorded call's instance, run on the
    host's arguments, compared against the module's float64 oracle. Returns the attribution
    and the file of the candidate's outputs, or why it could not be compared."""
    import torch

    knobs = {"call": CALL_BASE + call}
    handover = pair.prepare(knobs, init_seed)
    if handover.candidate is None:
        return f"the module could not be built for call {call}: {handover.reference.failure}"
    if not handover.candidate.ok:
        return f"the candidate could not be built for call {call}: {handover.candidate.failure}"
    slots, tensors = given_slots(torch.load(message["file"], weights_only=True))
    variant = InputVariant(name=f"stream:{call}", kind=VariantKind.SEED, seed=0)
    ref = pair.ask_reference(
        RunRequest(
            variant=variant, oracle=True, oracle_fallback=True, record_ops=False, given=slots
        ),
        tensors,
    )
    cand = pair.ask_candidate(
        RunRequest(variant=variant, record_ops=False, stability_delay_s=0.0, given=slots), tensors
    )
    if not ref.ok or not cand.ok:
        return (
            f"call {call} of the substituted stream failed: "
            f"{(ref.failure if not ref.ok else cand.failure)}"
        )[:300]
    data = ref.data
    count = len([d for d in data.outputs if d.get("kind") == "tensor"])
    outputs, oracle = ref.tensors[:count], ref.tensors[count : count + data.oracle_count]
    if len(cand.tensors) != count or len(oracle) != count:
        return f"call {call}: the candidate returned {len(cand.tensors)} tensor(s), not {count}"
    compared = [
        compare_output(c, r, o, policy=policy) for c, r, o in zip(cand.tensors, outputs, oracle)
    ]
    ratios = [c.error_ratio for c in compared if c.error_ratio is not None]
    errors = [c.candidate_error for c in compared if c.candidate_error is not None]
    answer = scratch / f"stream_c{call}_{_slug(target)}_out.pt"
    torch.save([t.clone() for t in cand.tensors], answer)
    return CallAttribution(
        target=target,
        call=call,
        path=str(message.get("path", "")),
        error_ratio=max(ratios) if ratios else None,
        error=max(errors) if errors else None,
        passed=all(c.passed for c in compared),
        stream="substituted",
    ), str(answer)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text)[:40]
