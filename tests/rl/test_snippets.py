"""The snippets of docs/rl.md, run: each region between ``# snippet: NAME`` and
``# end snippet`` is copied verbatim into the doc (tests/rl/test_docs.py checks the copy)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow

SOFTMAX = EXAMPLES / "softmax"
GOOD = (
    "Here it is.\n```python\n"
    + "".join(
        line for line in (SOFTMAX / "correct.py").open() if not line.startswith("# kernelproof")
    )
    + "```\n"
)
WRONG = "```python\n" + (SOFTMAX / "wrong_odd.py").read_text() + "```\n"


def test_trl_snippet():
    prompts = ["Write a faster softmax."] * 3
    completions = [GOOD, WRONG, "I would tile the rows."]
    references = [(SOFTMAX / "reference.py").read_text()] * 3
    # snippet: trl
    from kernelproof.rl.shaping import RewardShaping
    from kernelproof.rl.trl import kernel_reward

    # One float per completion: 0 unless verified, then 1.0 (correctness mode) or the
    # speedup's lower confidence bound (the default), plus 0.05 for a well-formed answer.
    reward = kernel_reward(
        reference_column="reference",
        deadline_s=300,
        shaping=RewardShaping(mode="correctness", format_weight=0.05),
    )
    # trainer = GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=dataset)
    # GRPOTrainer calls it with the dataset's columns as keyword arguments:
    rewards = reward(prompts=prompts, completions=completions, reference=references)
    assert rewards == [1.05, 0.05, 0.0]
    print([(s.verdict, s.decided_by, s.reason) for s in reward.last])
    # end snippet
    reward.close()


def test_verl_snippet(monkeypatch):
    import kernelproof.rl.verl

    monkeypatch.setattr(kernelproof.rl.verl, "_SCORER", None)
    reference = (SOFTMAX / "reference.py").read_text()
    # snippet: verl
    from kernelproof.rl.verl import compute_score_batch

    # What veRL's batch reward manager calls; ground_truth is the task's reference (its
    # source, a path, or a key of the suite in $KERNELPROOF_SUITE).
    scores = compute_score_batch(
        data_sources=["kernelbench"] * 2,
        solution_strs=[GOOD, WRONG],
        ground_truths=[reference] * 2,
        extra_infos=[None] * 2,
    )
    assert [s["verdict"] for s in scores] == ["verified", "incorrect"]
    assert scores[1]["score"] == 0.0 and scores[1]["decided_by"] == "matrix"
    # end snippet
    kernelproof.rl.verl.scorer().close()
    monkeypatch.setattr(kernelproof.rl.verl, "_SCORER", None)


def test_openrlhf_snippet(tmp_path: Path):
    from fastapi.testclient import TestClient

    from kernelproof.rl.scorer import BatchScorer
    from kernelproof.rl.shaping import RewardShaping
    from kernelproof.serve.app import create_app
    from kernelproof.serve.config import ServeConfig
    from kernelproof.serve.server import open_server
    from kernelproof.serve.tokens import create_token

    suite = Path(__file__).resolve().parents[2] / "tasks"
    token = create_token("trainer", tmp_path / "tokens.jsonl")
    config = ServeConfig(
        suite=suite,
        db_url=f"sqlite:///{tmp_path / 'r.db'}",
        tokens=tmp_path / "tokens.jsonl",
        workers=0,
    )
    application = create_app(open_server(config, lambda server: None))
    service = application.state.rewards  # correctness only: the snippet's subject is the call
    service.scorer = BatchScorer(
        tasks=service.tasks(),
        keep_report=service.keep,
        jobs=2,
        shaping=RewardShaping(mode="correctness"),
    )
    with TestClient(application) as http:
        prompt = "Optimise level1/19_NewGELU. Answer with one ```python block.\n"
        response = (
            "```python\n"
            + (suite / "solutions" / "level1" / "19_torch_fused_gelu.py").read_text()
            + "```\n"
        )
        # snippet: openrlhf
        # OpenRLHF posts {"query", "prompts", "labels"} to --remote_rm_url; the label is the
        # task's key in the served suite; tokens go in ?token= (OpenRLHF sends no headers).
        body = {"query": [prompt + response], "prompts": [prompt], "labels": ["level1/19_NewGELU"]}
        answer = http.post(f"/api/rewards/openrlhf?token={token}", json=body).json()
        assert answer["verdicts"] == ["verified"] and answer["scores"] == [1.0]
        report = http.get(
            f"/api/rewards/reports/{answer['report_ids'][0]}", params={"token": token}
        ).json()
        assert report["pipeline"]["decided_by"] == "op-audit"  # the last stage run
        # end snippet
