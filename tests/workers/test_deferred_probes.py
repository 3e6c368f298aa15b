"""Probes deferred past their reply (``RunRequest.defer_probes``): the stability wait and the
tamper diff run while the controller compares, and what they find still reaches it, naming
the call it belongs to. A real candidate worker with a background-thread candidate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelproof.config import resolve_settings
from kernelproof.protocol.requests import RunRequest, SettleRequest
from kernelproof.schema.variant import InputVariant, VariantKind
from kernelproof.tasks.source import read_task
from kernelproof.workers.pair import WorkerPair, prepare_request

pytestmark = pytest.mark.slow

#: Fills its output from a thread after returning, a piece every half millisecond (some 40 ms
#: in all): under way when the call returns, done within the harness's 0.2 s wait.
LATE_FILL = """
import threading, time
import torch


def _fill(out, answer):
    for piece, chunk in zip(out.view(-1).chunk(64), answer.view(-1).chunk(64)):
        time.sleep(0.0005)
        piece.copy_(chunk)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.zeros_like(x)
        threading.Thread(target=_fill, args=(out, torch.softmax(x, dim=-1))).start()
        return out
"""


def _checks(response) -> dict[str, str | None]:
    return {item["check"]: item.get("variant") for item in response.reply.observations}


def _prepared_pair(examples: Path, candidate: Path) -> tuple[WorkerPair, Any]:
    task = read_task(examples / "softmax" / "reference.py")
    pair = WorkerPair(task=task, candidate_path=candidate, settings=resolve_settings())
    assert pair.start_candidate().ok
    pair.start_reference()
    reference = pair.ask_reference(prepare_request(task.default_knobs, 0))
    assert reference.ok, reference.failure
    names = reference.data.state_names
    assert pair.ask_candidate(prepare_request(task.default_knobs, 0, names), reference.tensors).ok
    return pair, task


@pytest.mark.parametrize("deferred", [True, False])
def test_an_output_filled_after_the_call_is_seen_whether_or_not_the_wait_is_deferred(
    examples: Path, tmp_path: Path, deferred: bool
):
    candidate = tmp_path / "late.py"
    candidate.write_text(LATE_FILL)
    pair, _ = _prepared_pair(examples, candidate)
    with pair:
        variants = [InputVariant(name=f"seed:{i}", kind=VariantKind.SEED, seed=i) for i in (1, 2)]
        replies = [
            pair.ask_candidate(RunRequest(variant=v, stability_delay_s=0.2, defer_probes=deferred))
            for v in variants
        ]
        settled = pair.ask_candidate(SettleRequest())
    assert all(r.ok for r in replies) and settled.ok
    first, second = (_checks(r) for r in replies)
    if deferred:
        # The first call's wait ran after its reply: its finding comes with the second reply,
        # and the last call's with the settle request, each naming its own call.
        assert "output-unstable" not in first
        assert second["output-unstable"] == "seed:1"
        assert _checks(settled)["output-unstable"] == "seed:2"
    else:
        assert "output-unstable" in first and "output-unstable" in second
        assert "output-unstable" not in _checks(settled)
    # Deferred, the output is sent as the call left it, the thread's fill still under way:
    # the controller compares an unfinished output. Waited for, it is sent filled.
    sent = replies[0].tensors[0]
    assert bool((sent == 0).any()) is deferred


#: Keeps each output and writes into it during the next call: the re-read of a call's outputs
#: comes after the next request has run, so a write there is seen and named for the first call.
WRITES_LAST_OUTPUT = """
import torch

_last = []


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if _last:
            _last.pop().add_(1.0)
        out = torch.softmax(x, dim=-1)
        _last.append(out)
        return out
"""

#: Zeroes its input on the first call after it is built (the harness's unrecorded warm-up).
ZEROES_FIRST_INPUT = """
import torch

_calls = []


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if not _calls:
            x.zero_()
        _calls.append(1)
        return torch.softmax(x, dim=-1)
"""


def test_a_write_into_an_earlier_output_during_the_next_call_is_named_for_its_call(
    examples: Path, tmp_path: Path
):
    candidate = tmp_path / "writes_last.py"
    candidate.write_text(WRITES_LAST_OUTPUT)
    pair, _ = _prepared_pair(examples, candidate)
    with pair:
        first, second = (
            pair.ask_candidate(
                RunRequest(
                    variant=InputVariant(name=f"seed:{i}", kind=VariantKind.SEED, seed=i),
                    defer_probes=True,
                )
            )
            for i in (1, 2)
        )
        settled = pair.ask_candidate(SettleRequest())
    assert first.ok and second.ok and settled.ok
    assert "output-unstable" not in _checks(first)
    assert _checks(second)["output-unstable"] == "seed:1"
    assert "output-unstable" not in _checks(settled)  # nothing wrote into seed:2's output


def test_a_prepare_settles_the_last_call_around_itself(examples: Path, tmp_path: Path):
    """The next shape group's prepare runs inside the last call's stability wait, and its
    reply carries what the re-read after it found."""
    candidate = tmp_path / "late.py"
    candidate.write_text(LATE_FILL)
    pair, task = _prepared_pair(examples, candidate)
    with pair:
        run = pair.ask_candidate(
            RunRequest(
                variant=InputVariant(name="seed:1", kind=VariantKind.SEED, seed=1),
                stability_delay_s=0.2,
                defer_probes=True,
            )
        )
        reference = pair.ask_reference(prepare_request(task.default_knobs, 0))
        prepared = pair.ask_candidate(
            prepare_request(task.default_knobs, 0, reference.data.state_names), reference.tensors
        )
        settled = pair.ask_candidate(SettleRequest())
    assert run.ok and prepared.ok and settled.ok
    assert "output-unstable" not in _checks(run)
    assert _checks(prepared)["output-unstable"] == "seed:1"
    assert "output-unstable" not in _checks(settled)


def test_the_warm_up_call_runs_on_its_own_copy_of_given_inputs(examples: Path, tmp_path: Path):
    """Saved inputs (``verify --inputs``) arrive with the request; a candidate that changes
    them in the unrecorded warm-up call must not change the call that counts."""
    import torch

    from kernelproof.tasks.saved_inputs import given_slots

    candidate = tmp_path / "zeroes_first.py"
    candidate.write_text(ZEROES_FIRST_INPUT)
    x = torch.randn(4, 16)
    given, tensors = given_slots([x])
    pair, _ = _prepared_pair(examples, candidate)
    with pair:
        reply = pair.ask_candidate(
            RunRequest(
                variant=InputVariant(name="saved", kind=VariantKind.SAVED, seed=0), given=given
            ),
            tensors,
        )
    assert reply.ok, reply.failure
    assert torch.allclose(reply.tensors[0], torch.softmax(x, dim=-1))


#: Counts the calls made on it, warm-ups included, in its output.
COUNTS_CALLS = """
import torch
{extra}

_calls = []


class ModelNew(torch.nn.Module):
    def forward(self, x):
        _calls.append(1)
        return torch.full((1,), float(len(_calls)))
"""


@pytest.mark.parametrize("extra, later_warm_up", [("", False), ("import numba", True)])
def test_a_later_shape_is_warmed_up_only_for_a_candidate_that_may_compile(
    examples: Path, tmp_path: Path, extra: str, later_warm_up: bool
):
    """The first model always gets an unrecorded warm-up call; a plain PyTorch candidate's
    later models do not (it has nothing to compile), one that loaded numba's still do."""
    candidate = tmp_path / "counts.py"
    candidate.write_text(COUNTS_CALLS.format(extra=extra))
    pair, task = _prepared_pair(examples, candidate)
    variant = InputVariant(name="seed:1", kind=VariantKind.SEED, seed=1)
    with pair:
        first = pair.ask_candidate(RunRequest(variant=variant))
        reference = pair.ask_reference(prepare_request(task.default_knobs, 0))
        assert pair.ask_candidate(
            prepare_request(task.default_knobs, 0, reference.data.state_names), reference.tensors
        ).ok
        second = pair.ask_candidate(RunRequest(variant=variant))
    assert first.ok and second.ok
    assert float(first.tensors[0]) == 2  # the warm-up, then the call
    assert float(second.tensors[0]) == (4 if later_warm_up else 3)
