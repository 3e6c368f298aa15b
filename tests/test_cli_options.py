"""Setting flags are declared once (cli_options.SETTING_FLAGS) and mean the same in every
command, in the repro command a report prints, and on Settings."""

import subprocess
import sys
import typing

import click
import pytest
from click.testing import CliRunner

from kernelproof.cli import app
from kernelproof.cli_options import POLICY_SETTINGS, SETTING_FLAGS, flag_words, setting_options
from kernelproof.config import PROFILES, Settings, SettingsOverrides

POLICY_FLAGS = [
    "--allow-torch",
    "--strict",
    "--fixed-shapes",
    "--atol",
    "0.01",
    "--rtol",
    "0.02",
    "--dtype",
    "float16",
    "--device",
    "cpu",
    "--insecure-sandbox",
]

#: The Settings overrides POLICY_FLAGS ask for.
POLICY = {
    "allow_torch": True,
    "strict": True,
    "shape_variants": False,
    "atol": 0.01,
    "rtol": 0.02,
    "dtype": "float16",
    "device": "cpu",
    "insecure_sandbox": True,
}


def test_policy_options_become_one_dict_of_overrides():
    seen = {}

    @click.command()
    @setting_options(*POLICY_SETTINGS)
    def command(overrides):
        seen.update(overrides)

    assert CliRunner().invoke(command, POLICY_FLAGS).exit_code == 0
    assert seen == POLICY
    seen.clear()
    assert CliRunner().invoke(command, []).exit_code == 0
    assert seen == {}, "an option not given must inherit, never override"


def test_every_flag_row_names_a_settings_field_and_overrides_mirror_settings():
    assert {flag.setting for flag in SETTING_FLAGS} <= set(Settings.model_fields)
    hints = typing.get_type_hints(SettingsOverrides)
    assert set(hints) == set(Settings.model_fields), "SettingsOverrides must list every field"
    for name, field in Settings.model_fields.items():
        assert hints[name] == field.annotation, f"{name}: {hints[name]} != {field.annotation}"


#: A non-default value for every flag's setting, as Settings holds it.
NON_DEFAULT = {
    "device": "cpu",
    "dtype": "float16",
    "atol": 0.01,
    "rtol": 0.5,
    "allow_torch": True,
    "strict": True,
    "shape_variants": False,
    "insecure_sandbox": True,
    "seeds": 2,
    "base_seed": 7,
    "budget_s": 2.5,
    "timing": False,
    "stress_shapes": True,
    "threads": 3,
    "hot": True,
    "cache_flush": "full",
    "compile_baseline": False,
    "cuda_graphs": True,
    "default_knobs": {"dim": 3, "batch_size": 1},
    "input_seeds": [4, 5],
    "shrink": False,
    "inputs_file": "saved/inputs.pt",
    "fail_fast": True,
}


@pytest.mark.parametrize("flag", SETTING_FLAGS, ids=lambda flag: flag.setting)
def test_a_flag_written_for_a_repro_parses_back_to_the_same_setting(flag):
    """The words a report's repro command uses for a value are the flag that asks for it."""
    seen = {}

    @click.command()
    @setting_options(flag.setting)
    def command(overrides):
        seen.update(overrides)

    value = NON_DEFAULT[flag.setting]
    words = flag_words(flag.setting, value)
    assert words, f"{flag.setting}={value!r} has no flag words"
    result = CliRunner().invoke(command, words)
    assert result.exit_code == 0, result.output
    assert seen == {flag.setting: value}


def test_bench_takes_verify_policy_options_through_to_every_verification(monkeypatch, tmp_path):
    seen = {}

    def fake_run_bench(suite, solutions, options, console):
        seen.update(options.overrides, profile=options.profile)
        raise SystemExit(0)

    monkeypatch.setattr("kernelproof.suite.bench.run_bench", fake_run_bench)
    result = CliRunner().invoke(
        app,
        ["bench", str(tmp_path), "--solutions", str(tmp_path), "--profile", "ci", *POLICY_FLAGS],
    )
    assert result.exit_code == 0, result.output
    assert seen == {**POLICY, "profile": "ci"}


def test_profile_is_a_choice_of_the_profiles_table():
    for command in ("verify", "bench", "audit-task"):
        result = CliRunner().invoke(app, [command, "--help"])
        assert "|".join(sorted(PROFILES)) in result.output


def test_an_unknown_profile_is_the_error_exit_code_with_the_choices(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "verify", "a.py", "b.py", "--profile", "nope"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 4
    assert "'nope' is not one of" in result.stdout + result.stderr
