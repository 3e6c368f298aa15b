"""The completion corpus scored for real: what each taken candidate's verification must give
(``verdict`` in examples/completions/expected.yaml), through one batch of the scorer, with the
rewards the shaping promises."""

from __future__ import annotations

import pytest
from tests.conftest import EXAMPLES
from tests.rl.test_completion_corpus import CORPUS, EXPECTED, load_completion

from kernelproof.rl.scorer import BatchScorer
from kernelproof.rl.shaping import RewardShaping

pytestmark = pytest.mark.slow


def test_the_corpus_scores_as_expected():
    reference = (EXAMPLES / "softmax" / "reference.py").read_text()
    names = sorted(EXPECTED)
    items = [(reference, load_completion(CORPUS / name)) for name in names]
    with BatchScorer(
        jobs=2,
        shaping=RewardShaping(mode="correctness", format_weight=0.25),
        seeds=2,
        generated_shapes=False,
        native_audit=False,
    ) as scorer:
        scored = dict(zip(names, scorer.score(items)))
    for name in names:
        expected, result = EXPECTED[name], scored[name]
        if expected["take"] == "none":
            assert result.verdict is None and result.reward == 0.0, name
            continue
        assert result.verdict == expected["verdict"], (name, result.reason)
        bonus = 0.0 if result.verdict == "suspect" else 0.25
        assert result.reward == (1.0 if result.verdict == "verified" else 0.0) + bonus, name


def test_ray_actors_score_a_batch_in_order():
    pytest.importorskip("ray", reason="ray is part of the test extras; run scripts/test.sh")
    import ray

    reference = (EXAMPLES / "softmax" / "reference.py").read_text()
    items = [
        (reference, load_completion(CORPUS / "wrong_but_well_formed.md")),
        (reference, "no code"),
        (reference, load_completion(CORPUS / "plain_fenced.md")),
    ]
    try:
        with BatchScorer(
            ray="local",
            jobs=1,
            shaping=RewardShaping(mode="correctness"),
            seeds=2,
            generated_shapes=False,
            native_audit=False,
        ) as scorer:
            scored = scorer.score(items)
    finally:
        ray.shutdown()
    assert [s.verdict for s in scored] == ["incorrect", None, "verified"]
    assert [s.reward for s in scored] == [0.0, 0.0, 1.0]
    assert scored[0].decided_by == "matrix"  # right on randn, wrong on large values
