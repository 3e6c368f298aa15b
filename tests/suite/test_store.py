"""The results store: round trips, resume lookups, concurrent writers, history and compare."""

import multiprocessing
import os
import re
import sqlite3
import subprocess
import sys
import threading

import pytest

from kernelproof.errors import UsageError
from kernelproof.schema import (
    Artifact,
    Baselines,
    Correctness,
    CorrectnessTest,
    Environment,
    Finding,
    InputVariant,
    Report,
    Severity,
    ShapeTiming,
    TestOutcome,
    Timing,
    TimingStats,
    VariantKind,
    Verdict,
)
from kernelproof.store.metrics import record_from_report
from kernelproof.store.results import (
    DB_ENV,
    ResultsStore,
    RunStatus,
    default_url,
    settings_hash,
)

SETTINGS = {"device": "cpu", "seeds": 5, "timing": True, "build_s": 1.5}


def stats(median):
    return TimingStats(median_s=median, iqr_s=median / 10, samples=[median] * 3)


def make_report(
    verdict=Verdict.VERIFIED,
    speedup=2.0,
    ci=0.1,
    candidate="c" * 64,
    fingerprint="fp-machine-1",
    settings=SETTINGS,
    compile_speedup=1.25,
):
    """A real Report with timing; ``speedup=None`` leaves timing out."""
    variant = InputVariant(name="seed:0", kind=VariantKind.SEED, seed=1)
    outcome = TestOutcome.PASSED if verdict is not Verdict.INCORRECT else TestOutcome.FAILED
    findings = {
        Verdict.VERIFIED: [],
        Verdict.INCORRECT: [Finding(check="correctness", severity=Severity.FAIL, message="wrong")],
        Verdict.SUSPECT: [Finding(check="tampering", severity=Severity.SUSPECT, message="x")],
        Verdict.BROKEN: [
            Finding(check="crash", severity=Severity.FAIL, message="died", forces=Verdict.BROKEN)
        ],
    }[verdict]
    timing = None
    if speedup is not None:
        shapes = [
            ShapeTiming(
                variant=name,
                knobs={"dim": dim},
                reference=stats(1e-3 * factor),
                candidate=stats(1e-3 * factor / speedup),
                speedup=speedup * factor,
                speedup_ci=(speedup * factor - ci, speedup * factor + ci),
                floor_s=1e-6,
            )
            for name, dim, factor in (("default", 64, 1.0), ("dim*2", 128, 1.5))
        ]
        timing = Timing(
            reference=stats(1e-3),
            candidate=stats(1e-3 / speedup),
            speedup=speedup,
            speedup_ci=(speedup - ci, speedup + ci),
            per_shape=shapes,
            baselines=Baselines(eager=speedup, torch_compile=compile_speedup),
        )
    return Report(
        verdict=verdict,
        findings=findings,
        timing=timing,
        correctness=Correctness(
            seeds=[1],
            base_seed=0,
            default_knobs={"dim": 64},
            task_knobs={"dim": 64},
            tolerance={"mode": "oracle"},
            tests=[CorrectnessTest(variant=variant, seed=1, outcome=outcome)],
        ),
        environment=Environment(
            device="cpu", device_name="Test CPU", fingerprint=fingerprint, versions={"torch": "2.x"}
        ),
        candidate=Artifact(path=f"solutions/{candidate[:4]}.py", sha256=candidate),
        reference=Artifact(path="suite/level1/3_Softmax.py", sha256="r" * 64),
        settings=dict(settings),
        duration_s=3.5,
    )


@pytest.fixture()
def store(tmp_path):
    with ResultsStore(f"sqlite:///{tmp_path / 'results.db'}") as opened:
        yield opened


def test_round_trip_keeps_the_full_report_and_the_scored_columns(store):
    run_id = store.start_run(
        suite="suite",
        solutions="solutions",
        settings=SETTINGS,
        fingerprint="fp-machine-1",
        device="cpu",
        label="baseline",
    )
    report = make_report()
    store.add(run_id, "level1/3_Softmax", 1, 3, 0, report)
    store.finish_run(run_id)

    (run,) = store.runs()
    assert (run.id, run.status, run.label, run.settings) == (
        run_id,
        "finished",
        "baseline",
        SETTINGS,
    )
    assert run.finished_at is not None and run.kernelproof_version
    (row,) = store.verifications(run_id)
    assert (row.task_key, row.level, row.problem, row.sample) == ("level1/3_Softmax", 1, "3", 0)
    assert (row.verdict, row.exit_code, row.candidate_sha256) == ("verified", 0, "c" * 64)
    assert row.speedup == pytest.approx(2.0)
    assert (row.speedup_ci_low, row.speedup_ci_high) == pytest.approx((1.9, 2.1))
    assert row.speedup_vs_compile == pytest.approx(1.25)
    assert row.per_shape_speedups == {"default": pytest.approx(2.0), "dim*2": pytest.approx(3.0)}
    assert not row.floor_clamped and row.duration_s == 3.5
    assert row.settings_hash == settings_hash(SETTINGS)
    assert store.report(row.id) == report
    assert row.to_record() == record_from_report(report, "level1/3_Softmax", 1, 3, 0)
    assert store.records(run_id) == [row.to_record()]


def test_an_untimed_report_and_an_unknown_run(store):
    run_id = store.start_run(suite="s", solutions="d")
    store.add(run_id, "t", None, "p", 0, make_report(Verdict.BROKEN, speedup=None))
    (row,) = store.verifications(run_id)
    assert row.speedup is None and row.speedup_ci_low is None and row.per_shape_speedups == {}
    with pytest.raises(UsageError, match=r"no run with id 999 .* known runs: 1 \("):
        store.add(999, "t", None, "p", 0, make_report())
    with pytest.raises(UsageError, match="no run with id 'x'"):
        store.resolve_run("x")
    assert store.resolve_run(" 1 ").id == run_id


def test_settings_hash_ignores_order_and_result_neutral_keys():
    base = {"device": "cpu", "seeds": 5}
    assert settings_hash(base) == settings_hash(
        {"seeds": 5, "device": "cpu", "build_s": 9.0, "json_path": "out.json", "jobs": 8}
    )
    assert settings_hash(base) != settings_hash({**base, "seeds": 6})


def test_resume_finds_the_same_candidate_machine_and_settings_only(store):
    run_id = store.start_run(suite="s", solutions="d")
    store.add(run_id, "level1/3_Softmax", 1, 3, 0, make_report())
    key = ("c" * 64, "r" * 64, "fp-machine-1", settings_hash(SETTINGS))
    done = store.find_done(*key)
    assert done is not None and done.verdict == "verified"
    assert store.find_done("d" * 64, *key[1:]) is None  # other candidate
    assert store.find_done(key[0], "q" * 64, *key[2:]) is None  # other reference
    assert store.find_done(*key[:2], "fp-machine-2", key[3]) is None  # other machine
    assert store.find_done(*key[:3], settings_hash({**SETTINGS, "seeds": 9})) is None
    assert store.find_done(*key[:3], settings_hash({**SETTINGS, "build_s": 99})) is not None
    assert store.find_done(None, *key[1:]) is None

    resumed = store.start_run(suite="s", solutions="d")
    store.reuse(resumed, done)
    (copy,) = store.verifications(resumed)
    assert (copy.task_key, copy.speedup, copy.run_id) == (done.task_key, done.speedup, resumed)
    assert store.report(copy.id) == store.report(done.id)


def test_history_filters_and_orders_newest_first(store):
    run_id = store.start_run(suite="s", solutions="d")
    store.add(run_id, "a", 1, 1, 0, make_report(candidate="a" * 64))
    store.add(run_id, "b", 1, 2, 0, make_report(candidate="b" * 64))
    store.add(run_id, "a", 1, 1, 1, make_report(candidate="e" * 64))
    assert [(r.task_key, r.sample) for r in store.history()] == [("a", 1), ("b", 0), ("a", 0)]
    assert [r.sample for r in store.history(task_key="a")] == [1, 0]
    assert [r.task_key for r in store.history(candidate="bbbb")] == ["b"]
    assert [r.task_key for r in store.history(candidate="solutions/eeee.py")] == ["a"]
    assert len(store.history(limit=2)) == 2


def test_default_url_reads_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(DB_ENV, "sqlite:///elsewhere.db")
    assert default_url() == "sqlite:///elsewhere.db"
    monkeypatch.delenv(DB_ENV)
    monkeypatch.chdir(tmp_path)
    assert default_url() == f"sqlite:///{tmp_path / 'kernelproof.db'}"


def test_bad_urls_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no results store at"):
        ResultsStore(f"sqlite:///{tmp_path / 'missing.db'}", must_exist=True)
    with pytest.raises(UsageError, match="does not exist"):
        ResultsStore(f"sqlite:///{tmp_path / 'no' / 'dir.db'}")
    with pytest.raises(UsageError, match="not a database URL"):
        ResultsStore("not a url")


def test_threads_share_one_store(store):
    run_id = store.start_run(suite="s", solutions="d")

    def write(thread):
        for i in range(10):
            store.add(run_id, f"t{thread}", 1, thread, i, make_report())

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.verifications(run_id)) == 40


def _write_from_another_process(url, run_id, worker, count, barrier):
    with ResultsStore(url) as store:
        report = make_report()
        barrier.wait()
        for sample in range(count):
            store.add(run_id, f"level1/{worker}_task", 1, worker, sample, report)


@pytest.mark.skipif(sys.platform == "win32", reason="uses the fork start method")
def test_two_processes_write_one_sqlite_file(tmp_path):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    with ResultsStore(url) as store:
        run_id = store.start_run(suite="s", solutions="d")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    count = 40
    workers = [
        context.Process(
            target=_write_from_another_process, args=(url, run_id, worker, count, barrier)
        )
        for worker in (1, 2)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
    assert [p.exitcode for p in workers] == [0, 0]
    with ResultsStore(url) as store:
        rows = store.verifications(run_id)
        assert len(rows) == 2 * count
        assert {r.task_key for r in rows} == {"level1/1_task", "level1/2_task"}
    with sqlite3.connect(tmp_path / "shared.db") as connection:  # WAL persists in the file
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# -- the CLI -------------------------------------------------------------------------------------


def cli(*args, cwd=None):
    env = {**os.environ, "COLUMNS": "250"}
    env.pop(DB_ENV, None)
    return subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", *args],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture()
def two_runs(tmp_path):
    """Run 1: two verified tasks. Run 2: one lost its verdict, one sped up beyond its CI."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    with ResultsStore(url) as store:
        first = store.start_run(suite="s", solutions="d", label="before")
        store.add(first, "level1/1_Relu", 1, 1, 0, make_report(speedup=2.0, candidate="1" * 64))
        store.add(first, "level1/2_Softmax", 1, 2, 0, make_report(speedup=1.5, candidate="2" * 64))
        store.finish_run(first)
        second = store.start_run(suite="s", solutions="d", label="after")
        store.add(second, "level1/1_Relu", 1, 1, 0, make_report(speedup=3.0, candidate="3" * 64))
        store.add(
            second,
            "level1/2_Softmax",
            1,
            2,
            0,
            make_report(Verdict.INCORRECT, speedup=None, candidate="4" * 64),
        )
        store.finish_run(second, RunStatus.INTERRUPTED)
    return url, first, second


def test_history_command_prints_the_table(two_runs):
    url, _, _ = two_runs
    result = cli("history", "--db", url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 verification(s)" in result.stdout
    assert re.search(r"2 after .*level1/2_Softmax .*4444444444 .*incorrect .* - ", result.stdout)
    assert re.search(
        r"1 before .*level1/1_Relu .*1111111111 .*verified .*2\.00x .*Test CPU", result.stdout
    )
    only = cli("history", "--db", url, "--task", "level1/1_Relu", "--limit", "1")
    assert only.returncode == 0 and "1 verification(s)" in only.stdout
    assert "3.00x" in only.stdout and "Softmax" not in only.stdout


def test_history_on_a_missing_store_is_an_error(tmp_path):
    result = cli("history", "--db", f"sqlite:///{tmp_path / 'nothing.db'}")
    assert result.returncode == 4
    assert "no results store at" in result.stdout
    assert not (tmp_path / "nothing.db").exists()


def test_compare_flags_regressions_with_exit_1(two_runs):
    url, first, second = two_runs
    result = cli("compare", str(first), str(second), "--db", url)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(
        r"level1/2_Softmax .*verified .*1\.50x .*incorrect .*lost-verified", result.stdout
    )
    assert re.search(
        r"level1/1_Relu .*2\.00x \[1\.90, 2\.10\] .*3\.00x .*x1\.50 .*faster", result.stdout
    )
    assert re.search(
        r"2 tasks: 1 regression\(s\) \(1 lost verified, 0 slower\), "
        r"1 improvement\(s\)",
        result.stdout,
    )


def test_compare_without_regressions_exits_0(two_runs):
    url, first, _ = two_runs
    result = cli("compare", str(first), str(first), "--db", url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 regression(s)" in result.stdout and "2 unchanged" in result.stdout


def test_compare_with_a_bad_run_id_lists_the_known_runs(two_runs):
    url, first, _ = two_runs
    result = cli("compare", str(first), "7", "--db", url)
    assert result.returncode == 4
    text = " ".join(result.stdout.split())
    assert "no run with id '7'" in text
    assert re.search(r"known runs: 1 \(.*finished, before\); 2 \(.*interrupted, after\)", text)
