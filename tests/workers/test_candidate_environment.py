"""The environment a worker starts with is an allowlist built by the verifier: no secret of
the caller's reaches the forkserver, and the candidate sees exactly what was built for it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelproof.workers.candidate_environment import (
    allowed,
    candidate_environment,
    secret_name,
    trusted_environment,
)
from kernelproof.workers.pair import own_folder

CALLER = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "HOME": "/home/me",
    "OMP_NUM_THREADS": "4",
    "TRITON_INTERPRET": "1",
    "CUDA_VISIBLE_DEVICES": "0",
    "KERNELPROOF_CACHE_DIR": "/home/me/.cache/kp",
    "TORCH_EXTENSIONS_DIR": "/shared/ext",
    "OPENAI_API_KEY": "sk-abcdef123456",
    "HF_TOKEN": "hf_abcdef123456",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-123456",
    "DATABASE_URL": "postgresql://u:pw123456@db/x",
    "KERNELPROOF_DB": "postgresql://u:pw123456@db/x",
    "TRITON_API_KEY": "triton-secret-1",
    "GITHUB_PAT": "ghp_whatever123",
    "MY_APP_CONFIG": "not for kernels",
}

SECRETS = (
    "sk-abcdef123456",
    "hf_abcdef123456",
    "aws-secret-123456",
    "pw123456",
    "triton-secret-1",
    "ghp_whatever123",
    "not for kernels",
)


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "DATABASE_URL",
        "KERNELPROOF_DB",
        "TRITON_API_KEY",
        "PGPASSWORD",
        "SLACK_WEBHOOK",
    ],
)
def test_names_that_hold_secrets_are_recognised_and_never_allowed(name):
    assert secret_name(name)
    assert not allowed(name)


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "LC_ALL",
        "OMP_NUM_THREADS",
        "TRITON_INTERPRET",
        "TORCH_CUDA_ARCH_LIST",
        "CUDA_VISIBLE_DEVICES",
        "CC",
    ],
)
def test_the_toolchain_and_library_switches_pass(name):
    assert allowed(name) and not secret_name(name)


def test_the_candidate_gets_only_the_allowlist_its_scratch_and_its_own_caches():
    environment = candidate_environment(
        CALLER, scratch="/scratch/c1", build_caches={"TORCH_EXTENSIONS_DIR": "/builds/ext"}
    )
    assert environment["TMPDIR"] == environment["HOME"] == "/scratch/c1"
    assert environment["TORCH_EXTENSIONS_DIR"] == "/builds/ext"  # not the caller's shared one
    assert environment["OMP_NUM_THREADS"] == "4" and environment["TRITON_INTERPRET"] == "1"
    assert "KERNELPROOF_CACHE_DIR" not in environment  # where calibrations live is not its business
    text = json.dumps(environment)
    assert not [s for s in SECRETS if s in text], environment
    assert set(environment) <= {n for n in CALLER if allowed(n)} | {
        "TMPDIR",
        "HOME",
        "TORCH_EXTENSIONS_DIR",
        "TORCHINDUCTOR_COMPILE_THREADS",
        "OMP_WAIT_POLICY",
    }


def test_trusted_workers_keep_kernelproofs_settings_but_no_secret():
    environment = trusted_environment(CALLER)
    assert environment["KERNELPROOF_CACHE_DIR"] == "/home/me/.cache/kp"
    assert environment["HOME"] == "/home/me"
    assert not [s for s in SECRETS if s in json.dumps(environment)]


def test_the_forkserver_is_started_without_the_callers_secrets(tmp_path):
    """Every worker is forked from the forkserver: its environment (what /proc/<pid>/environ
    shows, and what a worker inherits) must hold none of the caller's secrets."""
    script = (
        "import glob\n"
        "from kernelproof.workers.process import start_forkserver\n"
        "start_forkserver()\n"
        "children = [c for f in glob.glob('/proc/self/task/*/children')\n"
        "            for c in open(f).read().split()]\n"
        "assert children, 'no forkserver started'\n"
        "for pid in children:\n"
        "    print(open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace'))\n"
    )
    caller = {
        **os.environ,
        "OPENAI_API_KEY": "sk-abcdef123456",
        "DATABASE_URL": "postgresql://u:pw123456@db/x",
    }
    result = subprocess.run(
        [sys.executable, "-c", script], env=caller, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = dict(
        entry.split("=", 1)
        for entry in result.stdout.replace("\n", "\0").split("\0")
        if "=" in entry
    )
    assert "PATH" in seen, seen
    assert "sk-abcdef123456" not in result.stdout and "pw123456" not in result.stdout, seen
    assert all(
        allowed(name) or name in {"HOME", "KERNELPROOF_CACHE_DIR", "TMPDIR", "XDG_CACHE_HOME"}
        for name in seen
    ), seen


def test_a_candidate_beside_the_callers_working_folder_may_list_it_and_read_its_files(
    tmp_path, monkeypatch
):
    (tmp_path / "candidate.py").write_text("x = 1\n")
    (tmp_path / "weights.json").write_text("{}")
    (tmp_path / "kernelproof.db").write_bytes(b"SQLite format 3\x00" + b"\0" * 100)
    (tmp_path / "helpers").mkdir()
    monkeypatch.chdir(tmp_path)
    own = own_folder(tmp_path / "candidate.py")
    assert own.listable == [str(tmp_path)]
    assert str(tmp_path / "candidate.py") in own.readable
    assert str(tmp_path / "weights.json") in own.readable
    assert str(tmp_path / "helpers") + "/" in own.readable
    # A results store holds other candidates' sources and the reference's answers.
    assert str(tmp_path / "kernelproof.db") not in own.readable


def test_a_candidate_elsewhere_reads_its_whole_folder(tmp_path, monkeypatch):
    folder = tmp_path / "kernel"
    folder.mkdir()
    (folder / "candidate.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    own = own_folder(folder / "candidate.py")
    assert own.readable == [str(folder)] and own.listable == []


# -- through the CLI, as a user runs it (slow) ------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
ATTACKS = ROOT / "examples" / "hacks" / "verifier"
SOFTMAX = ROOT / "examples" / "softmax" / "reference.py"


def _cli_verify(
    folder: Path, candidate: str, environment: dict[str, str], out: Path
) -> tuple[dict, str]:
    cli = str(Path(sys.executable).parent / "kernelproof")
    result = subprocess.run(
        [
            cli,
            "verify",
            "reference.py",
            candidate,
            "--json",
            str(out),
            "--no-timing",
            "--seeds",
            "2",
        ],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.exists(), result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(out.read_text()), result.stdout + result.stderr


@pytest.mark.slow
def test_a_candidate_that_raises_every_environment_it_can_read_publishes_no_secret(tmp_path):
    """40_environ_leak.py, run from a caller whose environment holds secrets."""
    shutil.copy(SOFTMAX, tmp_path / "reference.py")
    shutil.copy(ATTACKS / "40_environ_leak.py", tmp_path / "candidate.py")
    caller = {
        "HOME": str(tmp_path / "home"),
        "PATH": os.environ["PATH"],
        **{
            name: CALLER[name]
            for name in (
                "OPENAI_API_KEY",
                "HF_TOKEN",
                "DATABASE_URL",
                "KERNELPROOF_DB",
                "GITHUB_PAT",
                "MY_APP_CONFIG",
            )
        },
    }
    report, output = _cli_verify(tmp_path, "candidate.py", caller, tmp_path / "out.json")
    assert report["verdict"] == "broken", report["summary"]
    text = json.dumps(report) + output
    assert "RuntimeError" in text and "/proc/self/environ" in text  # it did publish something
    assert not [s for s in SECRETS if s in text], [s for s in SECRETS if s in text]


@pytest.mark.slow
def test_a_candidate_run_from_its_folder_cannot_read_the_store_or_write_beside_itself(tmp_path):
    """40c_own_folder_store.py beside a results store, verified from that folder."""
    import sqlite3

    shutil.copy(SOFTMAX, tmp_path / "reference.py")
    shutil.copy(ATTACKS / "40c_own_folder_store.py", tmp_path / "candidate.py")
    with sqlite3.connect(tmp_path / "kernelproof.db") as store:
        store.execute("create table answers (value text)")
        store.execute("insert into answers values ('the reference answer')")
    reference_before = (tmp_path / "reference.py").read_text()
    environment = {"HOME": str(tmp_path / "home"), "PATH": os.environ["PATH"]}
    report, _ = _cli_verify(tmp_path, "candidate.py", environment, tmp_path / "out.json")
    assert report["verdict"] == "suspect", report["summary"]
    denied = {
        f["evidence"].get("path") for f in report["findings"] if f["check"] == "audit-file-access"
    }
    assert str(tmp_path / "kernelproof.db") in denied and str(tmp_path / "reference.py") in denied
    assert (tmp_path / "reference.py").read_text() == reference_before
    assert not (tmp_path / "sitecustomize.py").exists()


def test_settings_travel_over_stdin_and_stay_out_of_the_childs_environment(monkeypatch):
    from kernelproof.workers.settings_pipe import start_with_settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdef123456")
    settings = json.dumps({"db_url": "postgresql://u:pw123456@db/x"})
    script = (
        "import os, sys, json\n"
        "from kernelproof.workers.settings_pipe import read_settings\n"
        "got = json.loads(read_settings())\n"
        "print(json.dumps({'settings': got, 'environ': open('/proc/self/environ','rb')"
        ".read().decode(errors='replace'), 'stdin': sys.stdin.read()}))\n"
    )
    process = start_with_settings([sys.executable, "-c", script], settings, stdout=subprocess.PIPE)
    out, _ = process.communicate(timeout=120)
    seen = json.loads(out)
    assert seen["settings"] == json.loads(settings)
    assert "pw123456" not in seen["environ"] and "sk-abcdef123456" not in seen["environ"]
    assert seen["stdin"] == ""  # read once; what the child starts later finds nothing
