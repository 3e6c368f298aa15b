"""Options shared by several commands are declared once and mean the same in each."""

import subprocess
import sys

import click
from click.testing import CliRunner

from kernelproof.cli import app
from kernelproof.cli_options import policy_options
from kernelproof.config import PROFILES

POLICY_FLAGS = ["--allow-torch", "--strict", "--fixed-shapes", "--atol", "0.01", "--rtol", "0.02",
                "--dtype", "float16", "--device", "cpu", "--insecure-sandbox"]

#: The Settings overrides POLICY_FLAGS ask for.
POLICY = {"allow_torch": True, "strict": True, "shape_variants": False, "atol": 0.01,
          "rtol": 0.02, "dtype": "float16", "device": "cpu", "insecure_sandbox": True}


def test_policy_options_become_one_dict_of_overrides():
    seen = {}

    @click.command()
    @policy_options
    def command(policy):
        seen.update(policy)

    assert CliRunner().invoke(command, POLICY_FLAGS).exit_code == 0
    assert seen == POLICY
    seen.clear()
    assert CliRunner().invoke(command, []).exit_code == 0
    assert set(seen.values()) == {None}, "an option not given must inherit, never override"


def test_bench_takes_verify_policy_options_through_to_every_verification(monkeypatch, tmp_path):
    seen = {}

    def fake_run_bench(suite, solutions, options, console):
        seen.update(options.overrides, profile=options.profile)
        raise SystemExit(0)

    monkeypatch.setattr("kernelproof.suite.bench.run_bench", fake_run_bench)
    result = CliRunner().invoke(app, ["bench", str(tmp_path), "--solutions", str(tmp_path),
                                      "--profile", "ci", *POLICY_FLAGS])
    assert result.exit_code == 0, result.output
    assert seen == {**POLICY, "profile": "ci"}


def test_profile_is_a_choice_of_the_profiles_table():
    for command in ("verify", "bench", "audit-task"):
        result = CliRunner().invoke(app, [command, "--help"])
        assert "|".join(sorted(PROFILES)) in result.output


def test_an_unknown_profile_is_the_error_exit_code_with_the_choices(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "verify", "a.py", "b.py", "--profile", "nope"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert result.returncode == 4
    assert "'nope' is not one of" in result.stdout + result.stderr
