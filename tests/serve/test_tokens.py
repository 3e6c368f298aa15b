"""Tokens: printed once by the CLI, stored only as a hash, names checked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernelproof.errors import UsageError
from kernelproof.serve.tokens import TokenBook, create_token, token_hash


def test_token_create_prints_the_token_alone_once_and_stores_only_its_hash(tmp_path):
    tokens = tmp_path / "tokens.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelproof.cli",
            "token",
            "create",
            "alice",
            "--tokens",
            str(tokens),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert result.stdout == token + "\n" and token.startswith("kp_") and len(token) > 40
    text = tokens.read_text()
    assert token not in text
    assert json.loads(text)["sha256"] == token_hash(token)
    assert tokens.stat().st_mode & 0o077 == 0  # readable by its owner only
    assert TokenBook.load(tokens).name_of(token) == "alice"
    assert TokenBook.load(tokens).name_of(token + "x") is None


def test_names_are_unique_and_safe_to_show(tmp_path):
    tokens = tmp_path / "tokens.jsonl"
    create_token("alice", tokens)
    with pytest.raises(UsageError, match="already has a token named 'alice'"):
        create_token("alice", tokens)
    with pytest.raises(UsageError, match="not allowed"):
        create_token("<script>", tokens)


def test_a_broken_tokens_file_names_the_line(tmp_path):
    tokens = tmp_path / "tokens.jsonl"
    tokens.write_text('{"name": "a", "sha256": "00"}\nnot json\n')
    with pytest.raises(UsageError, match=r"tokens.jsonl:2"):
        TokenBook.load(tokens)
    with pytest.raises(UsageError, match="kernelproof token create"):
        TokenBook.load(Path(tmp_path / "missing.jsonl"))
