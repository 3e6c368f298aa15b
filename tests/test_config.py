"""One resolved configuration: defaults < profile < task POLICY < explicit arguments."""

import pytest
from pydantic import ValidationError

from kernelproof.config import PROFILES, TASK_POLICY_KEYS, Settings, cache_dir, resolve_settings
from kernelproof.errors import UsageError


def test_defaults_come_from_settings():
    assert resolve_settings() == Settings()


def test_each_layer_overrides_the_one_below():
    profile_only = resolve_settings(profile="ci")
    assert profile_only.seeds == PROFILES["ci"]["seeds"] != Settings().seeds
    with_task = resolve_settings(profile="ci", task_policy={"seeds": 7})
    assert with_task.seeds == 7
    with_flag = resolve_settings(profile="ci", task_policy={"seeds": 7}, overrides={"seeds": 9})
    assert with_flag.seeds == 9


def test_none_means_inherit_in_every_layer():
    settings = resolve_settings(
        profile="strict", task_policy={"seeds": None}, overrides={"seeds": None, "strict": None}
    )
    assert settings.seeds == PROFILES["strict"]["seeds"]
    assert settings.strict is True


def test_a_task_policy_may_set_only_its_keys():
    settings = resolve_settings(task_policy={"budget_s": 99.0, "allow_torch": True})
    assert settings.budget_s == Settings().budget_s  # not a task's to set
    assert settings.allow_torch is True
    assert {"atol", "rtol", "allow_torch", "strict", "seeds"} <= TASK_POLICY_KEYS


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_resolves(name):
    settings = resolve_settings(profile=name)
    for key, value in PROFILES[name].items():
        assert getattr(settings, key) == value


def test_an_unknown_profile_names_the_choices():
    with pytest.raises(UsageError, match="unknown profile 'fast'.*ci, default"):
        resolve_settings(profile="fast")


def test_an_invalid_value_names_the_field_and_the_value():
    with pytest.raises(UsageError, match=r"seeds: .*\(got 0\)"):
        resolve_settings(overrides={"seeds": 0})


def test_an_unknown_setting_is_refused():
    with pytest.raises(UsageError, match="no_such_setting"):
        resolve_settings(overrides={"no_such_setting": 1})


def test_fixed_tolerance_mode_follows_atol_or_rtol():
    assert resolve_settings().tolerance_mode() == "oracle"
    assert resolve_settings(overrides={"rtol": 1e-3}).tolerance_mode() == "fixed"
    assert resolve_settings(profile="kernelbench-compat").tolerance_mode() == "fixed"


def test_settings_are_frozen():
    with pytest.raises(ValidationError):
        resolve_settings().seeds = 2  # type: ignore[misc]


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELPROOF_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("KERNELPROOF_CACHE_DIR")
    assert cache_dir().parts[-2:] == (".cache", "kernelproof")
