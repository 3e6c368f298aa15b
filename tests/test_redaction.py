"""Known secrets are masked in whatever a candidate can make kernelproof show."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelproof.redaction import (
    MASK,
    redact,
    redact_data,
    register_secret,
    secret_values,
)

ROOT = Path(__file__).resolve().parents[1]


def test_secret_values_are_taken_from_secret_names_and_url_credentials():
    environment = {
        "OPENAI_API_KEY": "sk-abcdef123456",
        "PATH": "/usr/bin",
        "SERVER_CONFIG": '{"db": "postgresql://app:hunter2222@db:5432/kp"}',
        "FLAG_TOKEN": "1",
    }
    found = secret_values(environment)
    assert "sk-abcdef123456" in found
    assert "hunter2222" in found  # a store URL's password, in any variable
    assert "/usr/bin" not in found
    assert "1" not in found  # too short to mean anything, masking it would garble every report


def test_redact_masks_every_occurrence_and_longest_first():
    secrets = secret_values({"DATABASE_URL": "postgresql://app:hunter2222@db/kp"})
    text = "connect postgresql://app:hunter2222@db/kp failed; password hunter2222"
    out = redact(text, secrets)
    assert "hunter2222" not in out and out.count(MASK) == 2


def test_redact_data_masks_nested_strings_and_keys():
    data = {
        "findings": [
            {
                "message": "RuntimeError: {'K': 'sk-abcdef123456'}",
                "evidence": {"sk-abcdef123456": 3},
            }
        ],
        "n": 3,
    }
    out = redact_data(data, ["sk-abcdef123456"])
    assert "sk-abcdef123456" not in repr(out) and out["n"] == 3


def test_registered_secrets_are_masked_too():
    register_secret("postgresql://kp:s3cr3t-registered@db/kp")
    found = secret_values({})
    assert "s3cr3t-registered" in found
    assert MASK in redact("dsn s3cr3t-registered")


@pytest.mark.slow
def test_a_secret_a_candidate_raises_is_masked_in_its_report(tmp_path, monkeypatch):
    """Second line of defence: a candidate that got hold of a secret some other way (here:
    written into its source) and raises it publishes only the mask."""
    from kernelproof.controller.verify import verify

    secret = "sk-live-abcdef1234567890"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    candidate = tmp_path / "candidate.py"
    candidate.write_text(
        "import torch.nn as nn\n\n\n"
        "class ModelNew(nn.Module):\n"
        "    def forward(self, x):\n"
        f"        raise RuntimeError('key: {secret}')\n"
    )
    report = verify(
        ROOT / "examples" / "softmax" / "reference.py", candidate, timing=False, seeds=1
    )
    text = report.model_dump_json()
    assert report.verdict.value == "broken"
    assert secret not in text and f"key: {MASK}" in text
