"""The task-adequacy audit, end to end: task -> reference worker -> mutants -> report.

Only a reference worker is started: there is no candidate. The worker runs the task at its
default shape (scaled to this machine's budget, as ``verify`` does) on a few seeds and returns
the reference's outputs, the float64 oracle's and the inputs; the mutants of each output are
then judged here by the same comparator ``verify`` uses (:mod:`kernelproof.checks.adequacy`).
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any

from kernelproof.checks.adequacy import adequacy_report, audit_notes, audit_output
from kernelproof.checks.tolerance import TolerancePolicy
from kernelproof.config import resolve_settings
from kernelproof.controller.sizing import fit_default_shape
from kernelproof.errors import TaskError
from kernelproof.protocol.requests import RunRequest
from kernelproof.schema import AdequacyReport, InputVariant, OutputAudit, VariantKind
from kernelproof.tasks.source import TaskSource, read_task
from kernelproof.tasks.variants import draw_seeds
from kernelproof.workers.pair import WorkerPair, prepare_request
from kernelproof.workers.process import Response

#: Seeds audited by default: enough that an input-dependent fluke (an output that happens to
#: be tiny on one draw) shows as "on 1 of 3 seeds", few enough to take seconds.
DEFAULT_SEEDS = 3


def audit_task(
    reference: str | Path,
    *,
    seeds: int = DEFAULT_SEEDS,
    base_seed: int | None = None,
    profile: str = "default",
    **settings: Any,
) -> AdequacyReport:
    """Audit whether ``reference``'s comparator can tell wrong answers from right ones.

    ``settings`` are :class:`~kernelproof.config.Settings` fields (``atol``, ``rtol``,
    ``dtype``, ``device``, ``threads``...), layered over ``profile`` and the task's ``POLICY``
    exactly as in ``verify``. With the same ``base_seed`` and ``seeds``, the audit draws the
    same inputs as ``verify`` does at the default shape.

    Raises :class:`~kernelproof.errors.TaskError` when the task cannot be read, constructed or
    run at its default shape, and :class:`~kernelproof.errors.UsageError` for bad settings;
    both messages say what to fix.
    """
    started = time.monotonic()
    path = Path(reference)
    task = read_task(path)
    config = resolve_settings(
        profile=profile,
        task_policy=task.policy,
        overrides={**settings, "seeds": seeds, "base_seed": base_seed},
    )
    base = config.base_seed if config.base_seed is not None else secrets.randbits(31)
    init_seed, seed_list = draw_seeds(base, config.seeds)
    policy = TolerancePolicy.from_settings(config)
    with WorkerPair(task=task, candidate_path=None, settings=config) as pair:
        pair.start_reference()
        sizing = fit_default_shape(pair, task.default_knobs, config)
        _prepare(pair, task, sizing.knobs, init_seed)
        outputs: list[OutputAudit] = []
        for index, seed in enumerate(seed_list):
            outputs += _audit_seed(pair, task, index, seed, policy)
    notes = [text for text in (sizing.scaled_down, sizing.warning, sizing.tiny_output) if text]
    notes += audit_notes(outputs)
    return adequacy_report(
        outputs,
        policy=policy,
        task=str(path),
        sha256=task.sha256,
        knobs=sizing.knobs,
        task_knobs=task.default_knobs,
        scaled_down=sizing.scaled_down,
        seeds=seed_list,
        base_seed=base,
        settings=config.model_dump(mode="json"),
        notes=notes,
        duration_s=time.monotonic() - started,
    )


def _prepare(pair: WorkerPair, task: TaskSource, knobs: dict[str, int], init_seed: int) -> None:
    response = pair.ask_reference(prepare_request(knobs, init_seed))
    if not response.ok:
        raise TaskError(
            f"{task.path}: the reference cannot be constructed at its default shape "
            f"{_knobs_text(knobs)}: {_reason(response, task)}. Fix `Model.__init__` or "
            "`get_init_inputs()` and rerun."
        )


def _audit_seed(
    pair: WorkerPair, task: TaskSource, index: int, seed: int, policy: TolerancePolicy
) -> list[OutputAudit]:
    variant = InputVariant(name=f"seed:{index}", kind=VariantKind.SEED, seed=seed)
    request = RunRequest(variant=variant, oracle=True, return_inputs=True)
    response = pair.ask_reference(request)
    if not response.ok:
        raise _run_failure(pair, task, request, response)
    references, oracles, inputs = _split(response, task)
    return [
        audit_output(ref, oracle, inputs, policy=policy, seed=seed, index=position)
        for position, (ref, oracle) in enumerate(zip(references, oracles))
    ]


def _run_failure(
    pair: WorkerPair, task: TaskSource, request: RunRequest, response: Response
) -> TaskError:
    """Explain a failed run. Reruns without the oracle to tell a task that fails outright from
    one whose float64 oracle (or a non-tensor output) is the problem."""
    seed = request.variant.seed
    plain = pair.ask_reference(request.model_copy(update={"oracle": False, "return_inputs": False}))
    if not plain.ok:
        return TaskError(
            f"{task.path}: the reference fails on its default inputs (seed {seed}): "
            f"{_reason(plain, task)}. Fix `forward` or `get_inputs()` and rerun."
        )
    described = plain.data.outputs
    others = [d.get("kind", "?") for d in described if d.get("kind") != "tensor"]
    if others:
        return TaskError(
            f"{task.path}: `forward` returns {', '.join(others)} besides tensors; only tensor "
            "outputs can be compared. Return a tensor or a tuple of tensors."
        )
    return TaskError(
        f"{task.path}: the reference runs in its working dtype but fails in float64, so it has "
        f"no oracle: {_reason(response, task)}. Make `forward` work when the model and its "
        "inputs are float64 (avoid hard-coded dtypes) and rerun."
    )


def _split(response: Response, task: TaskSource) -> tuple[list[Any], list[Any], list[Any]]:
    """The reply's tensors, cut into the reference's outputs, the oracle's, and the inputs."""
    data = response.data
    described = data.outputs
    count = sum(1 for d in described if d.get("kind") == "tensor")
    oracle_count = data.oracle_count
    input_count = data.input_count
    tensors = response.tensors
    if count == 0:
        kinds = ", ".join(d.get("kind", "?") for d in described) or "nothing"
        raise TaskError(
            f"{task.path}: `forward` returns no tensor (it returns {kinds}), so there is no "
            "output to audit. Return a tensor or a tuple of tensors."
        )
    if oracle_count != count or len(tensors) != count + oracle_count + input_count:
        raise TaskError(
            f"{task.path}: `forward` returns {count} tensor(s) in the working dtype but "
            f"{oracle_count} output(s) in float64. Return the same tensors whatever the dtype "
            "(no Python numbers or None among the outputs)."
        )
    return (
        tensors[:count],
        tensors[count : 2 * count],
        tensors[2 * count : 2 * count + input_count],
    )


def _reason(response: Response, task: TaskSource) -> str:
    """What went wrong in the worker, pointing at the task's own line when the traceback has
    one."""
    if response.death is not None:
        return response.death.message
    error = response.reply.error if response.reply is not None else None
    if error is None:
        return "unknown failure"
    text = f"{error.type}: {error.message}"
    lines = re.findall(
        rf'File "{re.escape(str(task.path.resolve()))}", line (\d+)', error.traceback
    )
    return f"{text} (at line {lines[-1]})" if lines else text


def _knobs_text(knobs: dict[str, int]) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in knobs.items()) + ")" if knobs else "(no knobs)"
