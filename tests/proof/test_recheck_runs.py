"""``kernelproof recheck`` as a team runs it after an upgrade: real verifications, real
re-proofs, the CLI in a subprocess. Each changes something: an edited report (another torch),
the thread count, a candidate's source, a package version in a throwaway venv, and an
interruption halfway."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy
import pytest

from kernelproof.controller.verify import verify
from kernelproof.report.files import write_json
from kernelproof.schema import Report
from kernelproof.store.results import ResultsStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
KERNELPROOF = [sys.executable, "-m", "kernelproof.cli"]

#: Small and untimed: the recheck is the point, not the speed.
QUICK: dict[str, Any] = {
    "profile": "quick",
    "timing": False,
    "native_audit": False,
    "base_seed": 11,
    "seeds": 1,
    "value_variants": False,
    "layout_variants": False,
    "shrink": False,
}


def _copy(source: str, folder: Path, name: str | None = None) -> Path:
    target = folder / (name or Path(source).name)
    shutil.copyfile(ROOT / source, target)
    return target


def _proof(folder: Path, name: str, reference: Path, candidate: Path, **settings: Any) -> Path:
    report = verify(reference, candidate, **{**QUICK, **settings})
    return write_json(report, folder / f"{name}.json")


def _recheck(
    *args: str, python: list[str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(python or KERNELPROOF), "recheck", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
    )


def _items(path: Path) -> dict[str, dict[str, Any]]:
    return {Path(item["key"]).name: item for item in json.loads(path.read_text())["items"]}


def _relocate(path: Path) -> None:
    """Record the report's sources by their bare names, as a user who ran verify in that
    folder would: recheck finds them beside the report."""
    data = json.loads(path.read_text())
    for side in ("candidate", "reference"):
        data[side]["path"] = Path(data[side]["path"]).name
    path.write_text(json.dumps(data))


def _edit_torch(path: Path, target: Path) -> Path:
    data = json.loads(path.read_text())
    data["environment"]["versions"]["torch"] = "2.12.0+cpu"
    target.write_text(json.dumps(data))
    return target


@pytest.fixture(scope="module")
def softmax(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the softmax task, its correct candidate and a verified report of them."""
    folder = tmp_path_factory.mktemp("softmax")
    reference = _copy("examples/softmax/reference.py", folder)
    candidate = _copy("examples/softmax/correct.py", folder)
    path = _proof(folder, "proof", reference, candidate)
    assert Report.model_validate_json(path.read_text()).verdict.value == "verified"
    return folder


def test_recheck_reproves_exactly_the_invalidated_verdicts_and_keeps_the_old(
    softmax: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "reports"
    shutil.copytree(softmax, folder)
    a = folder / "proof.json"
    b = _edit_torch(a, folder / "upgraded.json")  # its sources stay the fixture's
    _relocate(a)
    untouched = folder / "untouched.json"
    shutil.copyfile(softmax / "proof.json", untouched)  # the fixture's sources, unchanged
    originals = {p.name: p.read_bytes() for p in (a, b, untouched)}

    # Another torch (an edited report), and a source that changed after it was proved (the
    # folder's copy, which only proof.json names, now holds a kernel wrong at odd sizes):
    # exactly those two verdicts are re-proved, and the changed kernel loses its verdict.
    shutil.copyfile(ROOT / "examples/softmax/wrong_odd.py", folder / "correct.py")
    first = _recheck(
        str(folder), "--json", str(tmp_path / "first.json"), "--html", str(tmp_path / "first.html")
    )
    assert first.returncode == 1, first.stdout[-3000:]
    items = _items(tmp_path / "first.json")
    assert {k: v["status"] for k, v in items.items()} == {
        "proof.json": "reverified",
        "upgraded.json": "reverified",
        "untouched.json": "still-valid",
    }
    assert {
        k: [c["component"] for c in v["diff"]["changes"] if c["effect"] == "invalidates"]
        for k, v in items.items()
    } == {"proof.json": ["candidate"], "upgraded.json": ["torch"], "untouched.json": []}
    assert (items["proof.json"]["after"]["verdict"], items["proof.json"]["verdict_change"]) == (
        "incorrect",
        "lost-verified",
    )
    assert items["upgraded.json"]["after"]["verdict"] == "verified"
    assert "lost verified" in first.stdout
    html = (tmp_path / "first.html").read_text()
    assert 'data-status="reverified" class="lost"' in html and "torch 2.12.0+cpu -&gt;" in html
    [new] = folder.glob("upgraded.recheck-*.json")
    rechecked = Report.model_validate_json(new.read_text())
    assert rechecked.recheck.original.verdict.value == "verified"
    assert [c.component for c in rechecked.recheck.invalidated_by] == ["torch"]

    # The kernels now run at more threads than the matrix ran at: re-proved at that count.
    threads = (os.cpu_count() or 1) + 1
    second = _recheck(str(b), "--threads", str(threads), "--json", str(tmp_path / "second.json"))
    assert second.returncode == 0, second.stdout[-3000:]
    item = _items(tmp_path / "second.json")["upgraded.json"]
    assert item["status"] == "reverified"
    assert [c["component"] for c in item["diff"]["changes"] if c["effect"] == "invalidates"] == [
        "threads"
    ]
    newest = max(folder.glob("upgraded.recheck-*.json"), key=lambda p: p.stat().st_mtime)
    assert Report.model_validate_json(newest.read_text()).environment.matrix_threads == threads
    assert {p.name: p.read_bytes() for p in (a, b, untouched)} == originals  # never overwritten


def test_an_interrupted_store_recheck_resumes_without_redoing_work(
    softmax: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    report = Report.model_validate_json(
        _edit_torch(softmax / "proof.json", tmp_path / "old.json").read_text()
    )
    report = report.model_copy(
        update={
            "reference": report.reference.model_copy(
                update={"path": str(softmax / "reference.py")}
            ),
            "candidate": report.candidate.model_copy(update={"path": str(softmax / "correct.py")}),
        }
    )
    with ResultsStore(url) as store:
        run = store.start_run(suite="suite", solutions="solutions")
        for key in ("softmax/a", "softmax/b"):
            store.add(run, key, 1, key, 0, report)
    process = subprocess.Popen(
        [*KERNELPROOF, "recheck", "--db", url, "--jobs", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 600
    while _links(tmp_path / "results.db") < 1:
        assert process.poll() is None and time.monotonic() < deadline, process.stdout.read()
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output[-3000:]
    assert "run the same command again to resume" in " ".join(output.split())

    resumed = _recheck("--db", url, "--json", str(tmp_path / "resumed.json"))
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    statuses = sorted(
        item["status"] for item in json.loads((tmp_path / "resumed.json").read_text())["items"]
    )
    assert statuses == ["reverified", "reverified-earlier"]
    with ResultsStore(url) as store:
        rows = [v for r in store.runs() for v in store.verifications(r.id)]
        assert len(rows) == 4  # two proofs, two re-proofs: nothing done twice
        assert [r.status for r in store.runs()] == ["running", "interrupted", "finished"]


def _links(path: Path) -> int:
    try:
        with sqlite3.connect(path) as db:
            return db.execute("SELECT COUNT(*) FROM kernelproof_rechecks").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_another_numpy_in_a_throwaway_venv_reproves_the_verdict(
    softmax: Path, tmp_path: Path
) -> None:
    """A real package change: a venv that sees the project's packages, with another numpy
    minor release installed over them (from the package index, cached by pip)."""
    other = "2.2.6" if numpy.__version__.startswith("2.3") else "2.3.5"
    venv = tmp_path / "venv"
    subprocess.run(
        [sys._base_executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    project_site = next(p for p in sys.path if p.endswith("site-packages"))
    (Path(site) / "zz_project.pth").write_text(f"import site; site.addsitedir({project_site!r})\n")
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            site,
            f"numpy=={other}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, (
        f"could not install numpy {other} from the package index: {install.stderr[-2000:]}"
    )
    folder = tmp_path / "reports"
    shutil.copytree(softmax, folder)
    result = _recheck(
        str(folder),
        "--json",
        str(tmp_path / "venv.json"),
        python=[str(python), "-m", "kernelproof.cli"],
    )
    assert result.returncode == 0, result.stdout[-3000:]
    item = _items(tmp_path / "venv.json")["proof.json"]
    assert item["status"] == "reverified"
    [change] = [c for c in item["diff"]["changes"] if c["effect"] == "invalidates"]
    assert (change["component"], change["current"]) == ("numpy", other)
    [new] = folder.glob("proof.recheck-*.json")
    assert Report.model_validate_json(new.read_text()).environment.versions["numpy"] == other


def test_a_report_edited_to_take_the_walls_down_is_reproved_with_them_up(
    softmax: Path, tmp_path: Path
) -> None:
    """The attack of examples/hacks/recheck/escapes_when_rechecked.py: a report whose settings
    were edited to turn the sandbox and the probes off, and whose candidate was swapped for
    one that writes outside the sandbox."""
    folder = tmp_path / "reports"
    shutil.copytree(softmax, folder)
    report = folder / "proof.json"
    _relocate(report)
    data = json.loads(report.read_text())
    data["settings"].update(sandbox=False, insecure_sandbox=True, integrity_probes=False)
    report.write_text(json.dumps(data))
    _copy("examples/hacks/recheck/escapes_when_rechecked.py", folder, "correct.py")
    marker = folder / "ESCAPED"

    guarded = _recheck(str(report), "--json", str(tmp_path / "walls.json"))
    assert not marker.exists(), "the re-proof ran the candidate outside the sandbox"
    item = _items(tmp_path / "walls.json")["proof.json"]
    assert item["after"]["verdict"] == "suspect", guarded.stdout[-3000:]
    assert (
        "walls down (sandbox=False, insecure_sandbox=True, integrity_probes=False)"
        in item["message"]
    )
    assert guarded.returncode == 1  # a verified kernel is not verified any more

    # The defence is what stops it: with the user vouching for the report, the walls come
    # down as it says, and the candidate escapes.
    for stale in folder.glob("proof.recheck-*.json"):
        stale.unlink()
    trusted = _recheck(str(report), "--trust-settings")
    assert marker.exists(), trusted.stdout[-3000:]
