"""The pytest plugin: pairs from pyproject.toml and marked tests become verdict checks.

Fast tests run pytest in-process with ``verify_pair`` replaced by canned reports; the slow test
runs real verifications of bundled examples in a pytest subprocess.
"""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import kernelproof.pytest_plugin as plugin
from kernelproof.schema import Verdict

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

PAIRS = """
[tool.kernelproof]
pairs = [
  {reference = "ref.py", candidate = "good.py", options = {timing = false, seeds = 2}},
  {reference = "ref.py", candidate = "bad.py", name = "bad-kernel"},
  {reference = "ref.py", candidate = "bad.py", expect = "incorrect", name = "known-bad"},
]
"""


@pytest.fixture
def canned(monkeypatch, build_report):
    """``verify_pair`` answering from the candidate's name; records the pairs it was given."""
    seen: list[plugin.Pair] = []

    def fake(pair: plugin.Pair):
        seen.append(pair)
        if pair.candidate.name == "good.py":
            return build_report(Verdict.VERIFIED)
        return build_report(Verdict.INCORRECT)

    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.setattr(plugin, "verify_pair", fake)
    return seen


def test_the_plugin_is_registered_through_the_pytest11_entry_point():
    registered = {e.name: e.value for e in entry_points(group="pytest11")}
    assert registered.get("kernelproof") == "kernelproof.pytest_plugin", (
        "the pytest11 entry point is missing from the installed metadata: reinstall with "
        "`pip install -e .` (scripts/bootstrap.sh does it when pyproject.toml changes)"
    )


def test_pyproject_pairs_become_items_that_fail_on_the_wrong_verdict(pytester, canned):
    pytester.makepyprojecttoml(PAIRS)
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*pyproject.toml::good.py PASSED*",
            "*pyproject.toml::bad-kernel FAILED*",
            "*pyproject.toml::known-bad PASSED*",
            "*kernelproof verdict 'incorrect', expected verified*",
            "*summary: Incorrect: silently wrong on 2 of 7 variants*",
            "*[[]fail[]] correctness: silently wrong*",
            "*repro (shape:dim=4097): kernelproof verify*",
            "*rerun: kernelproof verify*",
        ]
    )
    good = canned[0]
    assert good.reference == pytester.path / "ref.py"
    assert good.options == {"timing": False, "seeds": 2}
    assert good.expect == ("verified",)


def test_pairs_run_when_testpaths_keep_collection_away_from_the_root(pytester, canned):
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n' + PAIRS)
    pytester.mkdir("tests")
    pytester.path.joinpath("tests", "test_plain.py").write_text("def test_ok():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3, failed=1)
    pytester.runpytest("-p", "no:cacheprovider", "tests").assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:cacheprovider", "-m", "kernelproof").assert_outcomes(
        passed=2, failed=1, deselected=1
    )


def test_marked_test_fails_before_its_body_on_the_wrong_verdict(pytester, canned):
    pytester.makepyfile("""
        import pytest

        @pytest.mark.kernelproof(reference="ref.py", candidate="good.py", timing=False)
        def test_good(kernelproof_report):
            assert kernelproof_report.verdict.value == "verified"

        @pytest.mark.kernelproof("ref.py", "bad.py")
        def test_bad():
            raise AssertionError("the body must not run")

        @pytest.mark.kernelproof(reference="ref.py", candidate="bad.py", expect=["incorrect"])
        def test_known_bad(kernelproof_report):
            assert kernelproof_report.repros
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*kernelproof verdict 'incorrect', expected verified*"])
    result.stdout.no_fnmatch_line("*the body must not run*")
    assert len(canned) == 3, "the fixture and the check share one verification"
    assert canned[0].options == {"timing": False}


def test_bad_declarations_say_what_to_fix(pytester, canned):
    pytester.makepyprojecttoml("""
        [tool.kernelproof]
        pairs = [{reference = "ref.py", candidate = "good.py", expect = "fast"}]
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*pairs[[]0[]]: `expect` must be one or more of*'fast'*"])
    result.assert_outcomes(errors=1)
    result.stdout.no_fnmatch_line("*Traceback*")
    pytester.makepyprojecttoml("""
        [tool.pytest.ini_options]
        testpaths = ["tests"]

        [tool.kernelproof]
        pairs = [{reference = "ref.py", candidate = "good.py", timing = false}]
    """)
    pytester.mkdir("tests")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*unknown key(s) [[]'timing'[]]*settings go in `options`*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_reports_folder_gets_json_and_html(pytester, canned):
    pytester.makepyprojecttoml("""
        [tool.kernelproof]
        pairs = [{reference = "ref.py", candidate = "good.py"}]
    """)
    out = pytester.path / "packets"
    pytester.runpytest("-p", "no:cacheprovider", f"--kernelproof-reports={out}").assert_outcomes(
        passed=1
    )
    (report,) = out.glob("*.json")
    assert json.loads(report.read_text())["verdict"] == "verified"
    assert report.with_suffix(".html").read_text().startswith("<!doctype html>")


@pytest.mark.slow
def test_real_verifications_gate_a_suite(pytester, monkeypatch):
    """One pytest subprocess, three real verifications of bundled examples (no timing)."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    softmax = EXAMPLES / "softmax"
    options = "{timing = false, seeds = 2, base_seed = 5}"
    reference = softmax / "reference.py"
    pairs = [
        f'{{reference = "{reference}", candidate = "{softmax / name}.py", name = "{name}", '
        f"options = {options}}}"
        for name in ("correct", "wrong_odd")
    ]
    pytester.makepyprojecttoml("[tool.kernelproof]\npairs = [\n" + ",\n".join(pairs) + "\n]\n")
    pytester.makepyfile(f"""
        import pytest

        @pytest.mark.kernelproof(reference=r"{softmax / "reference.py"}",
                                 candidate=r"{softmax / "wrong_odd.py"}", expect="incorrect",
                                 timing=False, seeds=2, base_seed=5)
        def test_known_wrong(kernelproof_report):
            assert kernelproof_report.correctness.failures
    """)
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*pyproject.toml::correct PASSED*",
            "*pyproject.toml::wrong_odd FAILED*",
            "*kernelproof verdict 'incorrect', expected verified*",
            "*summary: Incorrect: silently wrong on*",
            "*rerun: kernelproof verify*wrong_odd.py --seed 5 --seeds 2 --no-timing*",
        ]
    )


@pytest.mark.slow
def test_pairs_are_collected_on_xdist_workers(pytester, monkeypatch):
    """Workers get explicit paths from the controller; the pairs must still be collected.
    A missing reference gives a quick ``error`` verdict, which the pair expects."""
    pytest.importorskip("xdist")
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    pytester.makepyprojecttoml("""
        [tool.pytest.ini_options]
        testpaths = ["tests"]

        [tool.kernelproof]
        pairs = [{reference = "missing.py", candidate = "missing_too.py", expect = "error"}]
    """)
    pytester.mkdir("tests")
    pytester.path.joinpath("tests", "test_plain.py").write_text("def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=2)
