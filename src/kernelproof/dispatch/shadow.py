"""The shadow check: run the reference on the same inputs as the candidate and compare.

The inputs are saved before the candidate runs, so that a candidate that mutates them is
caught (and the caller's tensors are restored from the copy) and the reference computes on
what the caller passed. Outputs are judged by the report's own tolerance model
(:mod:`kernelproof.checks.tolerance`):

* **oracle** mode (the default): the reference is also run in float64 on the saved inputs (a
  float64 copy of it, its state refreshed from the reference before each check), and the
  candidate passes when its error against that oracle is within the report's factor of the
  reference's own error, exactly as in the correctness matrix. A reference that cannot run in
  float64 stands in for its oracle with its own error taken as a few units of the dtype's
  epsilon, as the matrix does (:func:`kernelproof.checks.oracle.fallback_own_error`).
* **fixed** mode (``--atol/--rtol``): the candidate is compared with the reference's output.

A check is split in two so that on CUDA the first half can be queued on a side stream and
the second done later (:mod:`kernelproof.dispatch.side_stream`): :meth:`ShadowCheck.start` saves
the inputs, calls the candidate, and queues the mutation test, the reference and the oracle;
:meth:`ShadowCheck.finish` reads the results on the host and judges them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelproof.checks.oracle import fallback_own_error, oracle_model
from kernelproof.checks.tolerance import OwnError, TolerancePolicy, compare_output
from kernelproof.schema.correctness import OutputComparison
from kernelproof.schema.incident import IncidentKind
from kernelproof.tasks.inputs import oracle_inputs


def tolerance_policy(tolerance: dict[str, Any]) -> TolerancePolicy:
    """The report's tolerance model (``correctness.tolerance``) as a policy."""
    if tolerance.get("mode") == "fixed":
        return TolerancePolicy(
            mode="fixed",
            atol=float(tolerance.get("atol") or 0.0),
            rtol=float(tolerance.get("rtol") or 0.0),
        )
    return TolerancePolicy(mode="oracle", factor=float(tolerance.get("factor", 3.0)))


def flat_outputs(value: Any) -> list[Any]:
    """A call's outputs as a list (a tuple or list return spread out)."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


@dataclass
class ShadowCall:
    """One shadow check between its start and its finish."""

    saved: list[Any]
    """The inputs as they were before the candidate ran."""

    candidate_output: Any = None
    raised: BaseException | None = None
    """What the candidate raised, if it did."""

    changed: list[tuple[int, torch.Tensor]] = field(default_factory=list)
    """Per tensor argument, a one-element tensor: whether the candidate changed it."""

    reference_output: Any = None
    oracle_output: Any = None
    oracle_failed: str | None = None
    """Why the float64 oracle could not run (the reference then stands in for it)."""

    done: Any = None
    """On CUDA, the event recorded on the side stream after the queued work."""


@dataclass
class ShadowOutcome:
    """The judgement of one shadow check."""

    kinds: list[IncidentKind]
    """Empty when the candidate agreed with the reference."""

    detail: str
    comparisons: list[OutputComparison]
    error_ratio: float | None
    call: ShadowCall

    @property
    def ok(self) -> bool:
        return not self.kinds


class ShadowCheck:
    """Shadow checks of one candidate against one reference under one tolerance model."""

    def __init__(self, reference: torch.nn.Module, tolerance: dict[str, Any]) -> None:
        self.reference = reference
        self.policy = tolerance_policy(tolerance)
        self._oracle: Any = None
        self._oracle_unavailable: str | None = None
        self._oracle_lock = threading.Lock()
        """Serving threads may shadow-check at once; the one float64 copy is shared."""

    def start(
        self, candidate: torch.nn.Module, args: tuple[Any, ...], stream: Any = None
    ) -> ShadowCall:
        """Save the inputs, call the candidate on the caller's tensors, then queue the
        mutation test, the reference and the oracle (on ``stream`` when one is given)."""
        call = ShadowCall(
            saved=[a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
        )
        try:
            call.candidate_output = candidate(*args)
        except Exception as exc:  # noqa: BLE001 - a raise is an incident, not a crash
            call.raised = exc
        with _on_stream(stream, args, call.saved, call.candidate_output):
            with torch.no_grad():
                call.changed = [
                    (i, _differs(a, s))
                    for i, (a, s) in enumerate(zip(args, call.saved))
                    if isinstance(a, torch.Tensor)
                ]
            # In the caller's grad mode: on a mismatch this output is what the caller gets.
            call.reference_output = self.reference(*call.saved)
            if self.policy.mode == "oracle":
                with torch.no_grad():
                    call.oracle_output, call.oracle_failed = self._run_oracle(call.saved)
            if stream is not None:
                call.done = torch.cuda.Event()
                call.done.record(stream)
        return call

    def finish(self, call: ShadowCall, args: tuple[Any, ...] | None) -> ShadowOutcome:
        """Judge a started check. With ``args`` (the caller's tensors, still live), a
        mutated input is restored from the saved copy."""
        kinds: list[IncidentKind] = []
        notes: list[str] = []
        mutated = [i for i, flag in call.changed if bool(flag)]
        if mutated:
            kinds.append(IncidentKind.INPUT_MUTATION)
            notes.append(f"the candidate changed input(s) {mutated}")
            if args is not None:
                with torch.no_grad():
                    for i in mutated:
                        args[i].copy_(call.saved[i])
        if call.raised is not None:
            kinds.append(IncidentKind.RAISED)
            notes.append(
                f"the candidate raised {type(call.raised).__name__}: {str(call.raised)[:300]}"
            )
            return ShadowOutcome(kinds, "; ".join(notes), [], None, call)
        comparisons, mismatch = self._compare(call)
        if mismatch:
            kinds.append(IncidentKind.MISMATCH)
            notes.append(mismatch)
        ratios = [c.error_ratio for c in comparisons if c.error_ratio is not None]
        return ShadowOutcome(
            kinds, "; ".join(notes), comparisons, max(ratios) if ratios else None, call
        )

    # -- helpers ---------------------------------------------------------------------------

    def _run_oracle(self, saved: list[Any]) -> tuple[Any, str | None]:
        with self._oracle_lock:
            return self._run_oracle_locked(saved)

    def _run_oracle_locked(self, saved: list[Any]) -> tuple[Any, str | None]:
        if self._oracle is None and self._oracle_unavailable is None:
            self._oracle = oracle_model(self.reference)
            if self._oracle is None:
                self._oracle_unavailable = "the reference cannot be copied (copy.deepcopy failed)"
        if self._oracle is None:
            return None, self._oracle_unavailable
        try:
            if isinstance(self._oracle, torch.nn.Module):
                # The reference's state may have moved on (trained weights, running stats).
                self._oracle.load_state_dict(self.reference.state_dict())
            return self._oracle(*oracle_inputs(saved)), None
        except Exception as exc:  # noqa: BLE001 - the reference stands in, as in the matrix
            return None, f"{type(exc).__name__}: {str(exc)[:200]}"

    def _compare(self, call: ShadowCall) -> tuple[list[OutputComparison], str]:
        candidate = flat_outputs(call.candidate_output)
        reference = flat_outputs(call.reference_output)
        if len(candidate) != len(reference):
            return [], (
                f"the candidate returned {len(candidate)} output(s), the reference {len(reference)}"
            )
        oracle = flat_outputs(call.oracle_output) if call.oracle_output is not None else None
        comparisons: list[OutputComparison] = []
        problems: list[str] = []
        with torch.no_grad():
            for index, (cand, ref) in enumerate(zip(candidate, reference)):
                if not isinstance(ref, torch.Tensor):
                    if cand != ref:
                        problems.append(
                            f"output {index}: {cand!r} where the reference gives {ref!r}"
                        )
                    continue
                if type(cand) is not torch.Tensor and not isinstance(cand, torch.Tensor):
                    problems.append(f"output {index} is a {type(cand).__name__}, not a tensor")
                    continue
                target, own_error = self._target(index, ref, oracle)
                result = compare_output(
                    cand.detach(), ref.detach(), target, policy=self.policy, own_error=own_error
                )
                comparisons.append(
                    OutputComparison(
                        index=index,
                        error_ratio=result.error_ratio,
                        candidate_error=result.candidate_error,
                        reference_error=result.reference_error,
                        floor=result.floor,
                        passed=result.passed,
                        detail=result.detail,
                    )
                )
                if not result.passed:
                    problems.append(f"output {index}: {result.detail}")
        return comparisons, "; ".join(problems)

    def _target(
        self, index: int, reference: torch.Tensor, oracle: list[Any] | None
    ) -> tuple[torch.Tensor, OwnError | None]:
        """What an output is measured against, and the reference's own error when it is not
        measured (the reference standing in for a missing oracle)."""
        if self.policy.mode == "fixed":
            return reference.detach(), None
        if oracle is not None and index < len(oracle) and isinstance(oracle[index], torch.Tensor):
            return oracle[index].detach(), None
        return reference.detach(), fallback_own_error(reference)


def _differs(after: torch.Tensor, before: torch.Tensor) -> torch.Tensor:
    """A one-element bool tensor: whether ``after`` differs from ``before`` bit for bit (NaN
    payloads and the sign of zero included). Stays on the device: no host synchronisation."""
    if after.shape != before.shape or after.dtype != before.dtype:
        return torch.ones((), dtype=torch.bool, device=before.device)
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(
        after.element_size()
    )
    if width is None or after.is_complex():
        return torch.ne(after, before).any()
    return torch.ne(after.contiguous().view(width), before.contiguous().view(width)).any()


@contextlib.contextmanager
def _on_stream(stream: Any, *held: Any) -> Iterator[None]:
    """Queue the block's work on ``stream`` (after what the current stream has queued), and
    keep the tensors it reads alive for it (``record_stream``). No stream: run in place."""
    if stream is None:
        yield
        return
    stream.wait_stream(torch.cuda.current_stream(stream.device))
    for group in held:
        for value in flat_outputs(group) if group is not None else []:
            if isinstance(value, torch.Tensor) and value.is_cuda:
                value.record_stream(stream)
    with torch.cuda.stream(stream):
        yield
