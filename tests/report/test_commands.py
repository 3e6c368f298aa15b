"""The reproduce command: same files, same seed, the non-default settings as flags."""

from __future__ import annotations

import shlex

from kernelproof.config import PROFILES, Settings
from kernelproof.report.commands import verify_command


def settings(**changes):
    return {**Settings().model_dump(mode="json"), **changes, "build_s": 1.0}


def command(build_report, **changes):
    return verify_command(build_report(settings=settings(**changes)))


def test_default_settings_give_the_bare_command_with_the_seed(build_report):
    assert command(build_report).words == [
        "kernelproof",
        "verify",
        "examples/softmax/reference.py",
        "examples/softmax/wrong_odd.py",
        "--seed",
        "1234",
    ]


def test_each_non_default_setting_becomes_its_flag(build_report):
    words = command(
        build_report,
        seeds=3,
        timing=False,
        allow_torch=True,
        strict=True,
        atol=0.01,
        rtol=0.02,
        shape_variants=False,
        threads=4,
        hot=True,
        compile_baseline=False,
        dtype="float16",
        device="cuda",
        cuda_graphs=True,
        budget_s=7.5,
        default_knobs={"dim": 3, "batch_size": 1},
        input_seeds=[5, 6],
        shrink=False,
        cache_flush="full",
    ).words
    text = " ".join(words)
    for flag in (
        "--seeds 3",
        "--no-timing",
        "--allow-torch",
        "--strict",
        "--atol 0.01",
        "--rtol 0.02",
        "--fixed-shapes",
        "--threads 4",
        "--hot",
        "--no-compile-baseline",
        "--dtype float16",
        "--device cuda",
        "--cuda-graphs",
        "--budget 7.5",
        "--knobs dim=3,batch_size=1",
        "--input-seed 5 --input-seed 6",
        "--no-shrink",
        "--cache-flush full",
    ):
        assert flag in text, flag


def test_a_profile_is_named_when_it_explains_settings_no_flag_can(build_report):
    result = command(build_report, **PROFILES["kernelbench-compat"])
    assert result.words[-2:] == ["--profile", "kernelbench-compat"]
    assert result.unexpressed == {}


def test_settings_without_a_flag_are_reported(build_report):
    result = command(build_report, tolerance_factor=5.0)
    assert result.unexpressed == {"tolerance_factor": 5.0}
    assert "--" not in " ".join(result.words[4:]).replace("--seed", "")


def test_paths_are_shell_quoted(build_report):
    from kernelproof.schema import Artifact

    report = build_report(candidate=Artifact(path="my kernels/k.py", sha256="0" * 64))
    assert shlex.split(verify_command(report).text)[3] == "my kernels/k.py"


def test_error_report_without_settings_or_reference(error):
    expected = "kernelproof verify REFERENCE examples/softmax/wrong_odd.py"
    assert verify_command(error).text == expected
