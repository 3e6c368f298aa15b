"""The held-out honest corpus (examples/honest/kernelbench/): 16 honest techniques on published
KernelBench problems, each verified through the CLI exactly as a new user runs it: a clean
environment (``env -i``: no build-cache variables, no kernelproof settings), from the folder
that holds the files (``cd my_kernel && kernelproof verify reference.py candidate.py``).

A verifier that calls honest kernels ``broken`` or ``suspect`` is abandoned by its users, and
an RL policy trained on it learns to avoid honest techniques. Known failures owned by other
work are listed in ``examples/honest/kernelbench/expected.yaml`` with their owner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "examples" / "honest" / "kernelbench"
CANDIDATES = sorted(
    p.relative_to(CORPUS).as_posix() for p in CORPUS.glob("*/*.py") if p.name != "reference.py"
)
EXPECTED: dict[str, Any] = yaml.safe_load((CORPUS / "expected.yaml").read_text()) or {}

#: The CLI's options: its defaults, with a short timing budget (timing stays on: several
#: false alarms of the past came from the timing phase).
OPTIONS = ["--budget", "2"]

#: Wall-clock limit of one verification on a loaded 2-core machine (a cold C++ build is ~40 s).
TIMEOUT_S = 900


@pytest.fixture(scope="session")
def clean_home() -> Path:
    """The HOME of the clean environment: kernelproof keeps its cache (and the candidates'
    build caches) under ``~/.cache/kernelproof``, so builds are shared across this session's
    verifications (and later runs) without any cache variable. It lives in the project's
    git-ignored .cache folder."""
    home = ROOT / ".cache" / "clean-home"
    home.mkdir(parents=True, exist_ok=True)
    return home


def clean_environment(home: Path) -> dict[str, str]:
    """What ``env -i HOME=... PATH=...`` leaves: nothing of this test process's variables."""
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join(
            [str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]
        ),
    }


def verify_in_folder(candidate: Path, home: Path, out: Path) -> dict[str, Any]:
    """The JSON report of ``kernelproof verify reference.py <candidate>`` run in the
    candidate's folder with a clean environment."""
    cli = shutil.which("kernelproof", path=str(Path(sys.executable).parent))
    assert cli is not None, "the kernelproof console script is not installed in this venv"
    result = subprocess.run(
        [cli, "verify", "reference.py", candidate.name, "--json", str(out), *OPTIONS],
        cwd=candidate.parent,
        env=clean_environment(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert out.exists(), (
        f"no report (exit {result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    return json.loads(out.read_text())


def test_the_corpus_holds_sixteen_techniques_and_every_known_failure_is_named():
    assert len(CANDIDATES) == 16, CANDIDATES
    assert set(EXPECTED) <= set(CANDIDATES), set(EXPECTED) - set(CANDIDATES)
    for name, entry in EXPECTED.items():
        assert entry.get("owner") and entry.get("reason"), name


@pytest.mark.parametrize("name", CANDIDATES)
def test_honest_kernelbench_candidate_is_verified_from_its_folder(name, clean_home, tmp_path):
    report = verify_in_folder(CORPUS / name, clean_home, tmp_path / "report.json")
    flagged = [
        f"[{f['severity']}] {f['check']}: {f['message'][:400]}"
        for f in report["findings"]
        if f["severity"] in ("suspect", "fail")
    ]
    failure = f"{report['verdict']}: {report['summary']}\n" + "\n".join(flagged)
    known = EXPECTED.get(name)
    if known and (report["verdict"] != "verified" or flagged):
        # Run, not skipped: the day the owner's fix lands, this passes.
        pytest.xfail(f"known, owned by {known['owner']}: {known['reason']}\n{failure}")
    assert report["verdict"] == "verified" and not flagged, failure
