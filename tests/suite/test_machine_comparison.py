"""``kernelproof compare`` on reports of one candidate from several environments: per machine
the verdict, speedup and %SOL side by side, what differs, and the flags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kernelproof.schema import Ceilings, Roofline, SolFraction, Verdict
from kernelproof.suite.machine_comparison import compare_machines

from .test_store import make_report


def _on(
    machine: str,
    isa: list[str],
    verdict: Verdict = Verdict.VERIFIED,
    speedup: float | None = 2.0,
    candidate: str = "c" * 64,
):
    report = make_report(verdict=verdict, speedup=speedup, candidate=candidate)
    environment = report.environment.model_copy(
        update={
            "cpu_model": machine,
            "arch": "x86_64",
            "isa": isa,
            "matrix_threads": 2,
            "fingerprint_schema": "kernelproof.fingerprint/1",
        }
    )
    roofline = Roofline(
        flops=1e6,
        bytes=1e6,
        floor_s=1e-4,
        sol_fraction=SolFraction(reference=0.1, candidate=0.2),
        ceilings=Ceilings(peak_flops=1e12, peak_bytes_per_s=1e11, source="table"),
    )
    return report.model_copy(update={"environment": environment, "roofline": roofline})


def test_a_kernel_verified_on_one_machine_and_not_another_is_flagged() -> None:
    result = compare_machines(
        [
            ("a.json", _on("Xeon A", ["avx2", "avx512f"])),
            ("b.json", _on("Epyc B", ["avx2"], Verdict.INCORRECT)),
        ]
    )
    [group] = result.groups
    assert [(r.machine, r.verdict.value) for r in group.rows] == [
        ("Xeon A, x86_64, 2 threads", "verified"),
        ("Epyc B, x86_64, 2 threads", "incorrect"),
    ]
    assert group.rows[0].sol_fraction == 0.2
    assert group.components["isa"] == ["avx2 avx512f", "avx2"]
    assert group.effects["isa"] == "invalidates" and group.effects["cpu_model"] == "annotates"
    assert group.flags == [
        "verified on Xeon A, x86_64, 2 threads (a.json), incorrect on "
        "Epyc B, x86_64, 2 threads (b.json)"
    ]
    assert int(result.exit_code) == 1


def test_fast_on_one_and_slow_on_another_is_flagged_and_a_lone_report_noted() -> None:
    result = compare_machines(
        [
            ("a.json", _on("Xeon A", ["avx2"], speedup=2.0)),
            ("b.json", _on("Xeon B", ["avx2"], speedup=0.5)),
            ("c.json", _on("Xeon A", ["avx2"], candidate="d" * 64)),
        ]
    )
    [group] = result.groups
    assert group.flags == [
        "faster than the reference on Xeon A, x86_64, 2 threads (2.00x), "
        "slower on Xeon B, x86_64, 2 threads (0.50x), beyond both intervals"
    ]
    assert result.alone == ["c.json"]
    same = compare_machines(
        [("a.json", _on("Xeon A", ["avx2"])), ("b.json", _on("Xeon B", ["avx2"], speedup=2.05))]
    )
    assert same.groups[0].flags == [] and int(same.exit_code) == 0


def test_the_cli_shows_two_environments_side_by_side(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(_on("Xeon A", ["avx2", "avx512f"]).to_json())
    (tmp_path / "b.json").write_text(_on("Epyc B", ["avx2"], Verdict.INCORRECT).to_json())
    (tmp_path / "notes.json").write_text("{}")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelproof.cli",
            "compare",
            str(tmp_path),
            "--json",
            str(tmp_path / "out" / "cmp.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    said = " ".join(result.stdout.split())
    assert result.returncode == 1, said
    assert "Xeon A, x86_64, 2 threads" in said and "Epyc B" in said and "20%" in said
    assert "isa" in said and "invalidates" in said and "flag: verified on Xeon A" in said
    assert "skipped:" in said and "notes.json" in said
    saved = json.loads((tmp_path / "out" / "cmp.json").read_text())
    assert saved["groups"][0]["flags"]
    missing = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "compare", "x", "y", "z"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 4 and "two run ids" in missing.stdout


def test_store_rows_of_one_candidate_are_compared_per_environment(tmp_path: Path) -> None:
    from kernelproof.store.results import ResultsStore

    url = f"sqlite:///{tmp_path / 'r.db'}"
    with ResultsStore(url) as store:
        run = store.start_run(suite="s", solutions="d")
        store.add(run, "softmax", 1, 1, 0, _on("Xeon A", ["avx2", "avx512f"]))
        store.add(run, "softmax", 1, 1, 1, _on("Xeon A", ["avx2", "avx512f"]))  # same env
        store.add(run, "softmax", 1, 1, 2, _on("Epyc B", ["avx2"], Verdict.INCORRECT))
    result = subprocess.run(
        [sys.executable, "-m", "kernelproof.cli", "compare", "--candidate", "cccc", "--db", url],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    said = " ".join(result.stdout.split())
    assert result.returncode == 1, said
    assert "on 2 machines" in said and "flag: verified on Xeon A" in said
