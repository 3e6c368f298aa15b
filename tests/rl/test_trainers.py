"""The adapters called exactly as each trainer calls them.

TRL: its own ``GRPOTrainer._calculate_rewards`` (and the helpers it calls), taken from the
pinned TRL wheel that scripts/bootstrap.sh downloads, run against a stand-in trainer object:
the call, its keyword arguments and the check of the returned list are TRL's code, not ours.
veRL (not on the package index): the calls its naive and batch reward managers make
(``verl/workers/reward_manager/naive.py`` and ``batch.py``), with the module loaded by path
the way ``verl/trainer/ppo/reward.py::get_custom_reward_fn`` loads it.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import logging
import sys
import zipfile
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from tests.conftest import ROOT
from tests.rl.canned import REFERENCE, FakeSession, by_marker, completion

from kernelproof.rl.scorer import BatchScorer
from kernelproof.rl.trl import kernel_reward

#: The TRL release whose trainer code the test runs (scripts/bootstrap.sh downloads it).
TRL_WHEEL = ROOT / ".cache" / "trainers" / "trl-1.16.0-py3-none-any.whl"


def trl_function(wheel: zipfile.ZipFile, module: str, name: str) -> str:
    """The source of one top-level function or method of a TRL module, decorators removed."""
    tree = ast.parse(wheel.read(module).decode())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            node.decorator_list = []
            return ast.unparse(node)
    raise AssertionError(f"TRL's {module} has no {name}: its reward call changed")


@pytest.fixture(scope="module")
def calculate_rewards() -> Any:
    """TRL's ``GRPOTrainer._calculate_rewards``, with its own ``is_conversational``,
    ``is_async_callable`` and ``get_callable_name``; accelerate's ``gather`` is the identity
    on one process and the profiler a no-op."""
    assert TRL_WHEEL.is_file(), "run scripts/bootstrap.sh: it downloads TRL's wheel"
    namespace: dict[str, Any] = {
        "torch": torch,
        "nn": torch.nn,
        "asyncio": asyncio,
        "inspect": __import__("inspect"),
        "functools": __import__("functools"),
        "Any": Any,
        "profiling_context": lambda trainer, name: contextlib.nullcontext(),
        "gather": lambda tensor: tensor,
        "logger": logging.getLogger("trl-under-test"),
    }
    with zipfile.ZipFile(TRL_WHEEL) as wheel:
        for module, name in [
            ("trl/data_utils.py", "is_conversational"),
            ("trl/trainer/utils.py", "is_async_callable"),
            ("trl/trainer/utils.py", "get_callable_name"),
            ("trl/trainer/grpo_trainer.py", "_calculate_rewards"),
        ]:
            exec(compile(trl_function(wheel, module, name), f"{module}::{name}", "exec"), namespace)
    return namespace


def trainer(namespace: dict[str, Any], reward: Any) -> SimpleNamespace:
    extra: dict[str, list[Any]] = defaultdict(list)
    metrics: dict[str, list[float]] = defaultdict(list)
    return SimpleNamespace(
        accelerator=SimpleNamespace(device="cpu"),
        reward_funcs=[reward],
        reward_processing_classes=[None],
        reward_func_names=[namespace["get_callable_name"](reward)],
        state=SimpleNamespace(),
        environments=None,
        extra=extra,
        metrics=metrics,
        _log_completion_extra=lambda column, values: extra[column].extend(values),
        _log_metric=lambda name, value: metrics[name].append(value),
    )


def test_grpo_trainer_calls_the_reward_with_its_columns(calculate_rewards):
    session = FakeSession(by_marker)
    reward = kernel_reward(session=session, jobs=2)
    fake = trainer(calculate_rewards, reward)
    prompts = ["Write a faster softmax."] * 3
    completions = [completion("# fast"), "I cannot do that.", completion("# verdict: incorrect")]
    inputs = [{"prompt": p, "reference": REFERENCE, "level": 1} for p in prompts]
    rewards = calculate_rewards["_calculate_rewards"](
        fake, inputs, prompts, completions, [[1, 2]] * 3
    )
    assert rewards.shape == (3, 1)
    assert rewards[:, 0].tolist() == [1.5, 0.0, 0.0]
    assert fake.reward_func_names == ["kernelproof"]
    assert fake.extra["kernelproof_verdict"] == ["verified", "none", "incorrect"]
    assert fake.metrics["kernelproof/verified"] == [pytest.approx(1 / 3)]
    reward.close()


def test_conversational_completions_are_read_from_the_assistant_message(calculate_rewards):
    session = FakeSession(by_marker)
    reward = kernel_reward(session=session, jobs=2)
    fake = trainer(calculate_rewards, reward)
    prompts = [[{"role": "user", "content": "Write a faster softmax."}]] * 2
    completions = [
        [{"role": "assistant", "content": completion("# fast")}],
        [{"role": "assistant", "content": "no code"}],
    ]
    inputs = [{"prompt": p, "reference": REFERENCE} for p in prompts]
    rewards = calculate_rewards["_calculate_rewards"](fake, inputs, prompts, completions, [[1]] * 2)
    assert rewards[:, 0].tolist() == [1.5, 0.0]


def test_a_missing_reference_column_is_named_with_the_columns_there(calculate_rewards):
    reward = kernel_reward(session=FakeSession(by_marker))
    fake = trainer(calculate_rewards, reward)
    with pytest.raises(KeyError, match=r"no 'reference' column .*\['level', 'task'\]"):
        calculate_rewards["_calculate_rewards"](
            fake, [{"prompt": "p", "task": "x", "level": 1}], ["p"], [completion()], [[1]]
        )


def test_the_reward_pickles_without_its_session():
    import pickle

    reward = kernel_reward(jobs=1, deadline_s=10.0)
    copy = pickle.loads(pickle.dumps(reward))
    assert copy.__name__ == "kernelproof" and copy.scorer_options["deadline_s"] == 10.0


# -- veRL --------------------------------------------------------------------------------------


@pytest.fixture
def verl_module(monkeypatch) -> Any:
    """``kernelproof/rl/verl.py`` loaded by path as veRL's get_custom_reward_fn loads it, its
    scorer on the stand-in Session."""
    import kernelproof.rl.verl as installed

    monkeypatch.setattr(installed, "_SCORER", BatchScorer(session=FakeSession(by_marker), jobs=2))
    spec = importlib.util.spec_from_file_location("custom_module", installed.__file__)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "custom_module", module)
    spec.loader.exec_module(module)
    yield module
    installed._SCORER.close()


def test_verl_naive_manager_call(verl_module):
    score = verl_module.compute_score(
        data_source="kernelbench",
        solution_str=completion("# fast"),
        ground_truth=REFERENCE,
        extra_info={"num_turns": None},
    )
    assert score["score"] == 1.5 and score["verdict"] == "verified"


def test_verl_batch_manager_call_keeps_one_key_set_and_the_order(verl_module):
    scores = verl_module.compute_score_batch(
        data_sources=["kernelbench"] * 3,
        ground_truths=[REFERENCE] * 3,
        solution_strs=["nothing", completion("# verdict: suspect"), completion("# fast")],
        extra_infos=[None] * 3,
    )
    assert [s["score"] for s in scores] == [0.0, 0.0, 1.5]
    assert len({tuple(sorted(s)) for s in scores}) == 1  # veRL stacks each key into an array
    assert [s["verdict"] for s in scores] == ["none", "suspect", "verified"]
