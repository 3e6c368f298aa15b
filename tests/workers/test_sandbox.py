"""The OS sandbox, tested from inside: a forked process enters it and tries what a candidate
that read kernelproof's source would try. Each probe must fail where the sandbox says it holds."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelproof import sandbox
from kernelproof.workers.process_tree import ProcessTree


def _probe(plan: sandbox.SandboxPlan, probes: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Fork, enter the sandbox, run each probe and report what each returned or raised."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read)
            state = sandbox.enter(plan)
            results: dict[str, Any] = {
                "state": {"enforced": state.enforced, "missing": state.missing}
            }
            for name, probe in probes.items():
                try:
                    results[name] = {"ok": repr(probe())[:200]}
                except BaseException as exc:  # noqa: BLE001 - a probe's failure is its result
                    results[name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            os.write(write, json.dumps(results).encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return json.loads(b"".join(chunks))


@pytest.fixture
def plan(tmp_path: Path) -> sandbox.SandboxPlan:
    scratch = tmp_path / "scratch"
    builds = tmp_path / "builds"
    scratch.mkdir()
    builds.mkdir()
    return sandbox.SandboxPlan(
        scratch=str(scratch), writable=[str(builds)], readable=sandbox.readable_defaults()
    )


def _write(path: str) -> Callable[[], Any]:
    def probe() -> int:
        with open(path, "w") as handle:
            return handle.write("poison")

    return probe


def test_every_mechanism_is_entered_on_this_machine(plan):
    results = _probe(plan, {})
    assert results["state"]["missing"] == {}, results["state"]
    enforced = set(results["state"]["enforced"])
    for mechanism in (
        "user-namespace",
        "pid-namespace",
        "net-namespace",
        "ipc-namespace",
        "mnt-namespace",
        "private-proc",
        "private-tmp-and-shm",
        "seccomp",
        "no-capabilities",
        "resource-limits",
    ):
        assert mechanism in enforced
    assert any(m.startswith("landlock-abi-") for m in enforced)


def test_a_confined_process_cannot_see_or_signal_its_siblings(plan):
    sibling = os.fork()
    if sibling == 0:  # pragma: no cover
        time.sleep(30)
        os._exit(0)
    try:
        results = _probe(
            plan,
            {
                "pids": lambda: sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                "kill": lambda: os.kill(sibling, signal.SIGSTOP),
                "kill_parent_group": lambda: os.killpg(os.getpgid(0), 0),
                "ptrace_mem": lambda: open(f"/proc/{os.getppid()}/mem", "rb").read(1),
            },
        )
        pids = json.loads(results["pids"]["ok"].replace("'", '"'))
        assert max(pids) <= 3, pids  # its init, itself, and nothing from outside
        assert "error" in results["kill"] and "ProcessLookupError" in results["kill"]["error"]
        assert "error" in results["ptrace_mem"]
        state = open(f"/proc/{sibling}/stat").read().split()[2]
        assert state != "T", "the sibling was stopped"
    finally:
        os.kill(sibling, signal.SIGKILL)
        os.waitpid(sibling, 0)


#: A folder outside every masked one (/tmp is masked), so that only Landlock stands between the
#: confined process and it: the project's own git-ignored cache folder.
OUTSIDE = Path(__file__).resolve().parents[2] / ".cache"


def test_a_confined_process_writes_only_its_scratch_and_builds(plan, tmp_path):
    protected = OUTSIDE / f"sandbox-test-{os.getpid()}" / "calibration.json"
    protected.parent.mkdir(parents=True, exist_ok=True)
    protected.write_text("{}")
    hidden = tmp_path / "elsewhere.json"
    hidden.write_text("{}")
    results = _probe(
        plan,
        {
            "scratch": _write(os.path.join(plan.scratch, "ok.txt")),
            "builds": _write(os.path.join(plan.writable[0], "ext.so")),
            "cache": _write(str(protected)),
            "cache_read": lambda: open(protected).read(),
            "tmp_elsewhere": lambda: open(hidden).read(),
            "site_packages": _write(os.path.join(os.path.dirname(os.__file__), "poison.py")),
            "tmp": lambda: sorted(os.listdir("/tmp")),
            "dev_shm": lambda: sorted(os.listdir("/dev/shm")),
        },
    )
    assert "ok" in results["scratch"] and "ok" in results["builds"]
    # Landlock refuses it (PermissionError); a project checked out under /tmp (CI clones often
    # are) is behind the /tmp mask first, where the file does not exist at all.
    unreachable = ("PermissionError", "FileNotFoundError")
    assert results["cache"]["error"].startswith(unreachable), results["cache"]
    assert results["cache_read"]["error"].startswith(unreachable), results["cache_read"]
    assert "error" in results["tmp_elsewhere"]
    assert "error" in results["site_packages"]
    assert protected.read_text() == "{}"
    protected.unlink()
    protected.parent.rmdir()
    assert results["dev_shm"] == {"ok": "[]"}
    # /tmp holds only the paths the plan re-exposed (the test's tmp_path lives there)
    assert "pymp" not in json.dumps(results["tmp"])


def test_a_confined_process_has_no_network_and_no_escape_hatches(plan):
    def connect() -> None:
        with socket.create_connection(("127.0.0.1", 22), timeout=1):
            pass

    results = _probe(
        plan,
        {
            "interfaces": lambda: sorted(name for _, name in socket.if_nameindex()),
            "connect": connect,
            "unshare": lambda: (
                os.unshare(os.CLONE_NEWUSER)
                if hasattr(os, "unshare")
                else sandbox._check(sandbox._LIBC.unshare(sandbox.CLONE_NEWUSER), "unshare")
            ),
            "setuid_root_caps": lambda: open("/proc/self/status").read().split("CapEff:")[1][:20],
        },
    )
    assert results["interfaces"]["ok"] in ("['lo']", "[]")
    assert "error" in results["connect"]
    assert "error" in results["unshare"]
    assert results["setuid_root_caps"]["ok"].strip("'\\t ").startswith("0000000000000000")


def test_the_controller_sees_the_confinement_from_outside(plan):
    """ProcessTree reads /proc, not the worker's words: namespaces, seccomp, capabilities."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover
        os.close(read)
        sandbox.enter(plan)
        os.write(write, b"ready")
        time.sleep(30)
        os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 5) == b"ready"
        tree = ProcessTree(pid)
        confinement = tree.confinement()
        assert confinement.missing() == [], confinement
        assert len(tree.members()) == 3  # P, the namespace's init, the confined process
        before = tree.cpu_s()
        assert before > 0
    finally:
        os.killpg(os.getpgid(pid), signal.SIGKILL) if os.getpgid(pid) != os.getpgid(0) else (
            os.kill(pid, signal.SIGKILL)
        )
        os.waitpid(pid, 0)


def test_exit_status_and_signals_reach_the_controller_unchanged(plan):
    for action, expected in (
        (lambda: os._exit(7), ("exit", 7)),
        (lambda: os.kill(os.getpid(), signal.SIGSEGV), ("signal", 11)),
    ):
        pid = os.fork()
        if pid == 0:  # pragma: no cover
            import faulthandler

            faulthandler.disable()  # the segfault is the point; no dump in the test log
            sandbox.enter(plan)
            action()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        got = (
            ("signal", os.WTERMSIG(status))
            if os.WIFSIGNALED(status)
            else ("exit", os.WEXITSTATUS(status))
        )
        assert got == expected


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="the sandbox is Linux's")


def _name_a_new_thread() -> str:
    """What cuInit does for each thread it starts (glibc's pthread_setname_np for another
    thread): write its name to /proc/self/task/<tid>/comm."""
    import threading

    started, stop = threading.Event(), threading.Event()
    tids: list[int] = []

    def run() -> None:
        tids.append(threading.get_native_id())
        started.set()
        stop.wait(5)

    thread = threading.Thread(target=run)
    thread.start()
    started.wait(5)
    try:
        with open(f"/proc/self/task/{tids[0]}/comm", "w") as handle:
            handle.write("cuda-worker")
        with open(f"/proc/self/task/{tids[0]}/comm") as handle:
            return handle.read().strip()
    finally:
        stop.set()
        thread.join()


def test_a_cuda_worker_may_name_its_own_threads_and_nothing_beyond(plan):
    """CUDA refused to start under Landlock on an H200 (error 304) because it could not name
    its threads. A CUDA plan may write its own task folder, and still not its parent's files
    in /proc nor anything else a plain plan refuses."""
    plain = _probe(plan, {"name thread": _name_a_new_thread})
    assert "PermissionError" in plain["name thread"].get("error", ""), plain
    plan.cuda = True
    results = _probe(
        plan,
        {
            "name thread": _name_a_new_thread,
            "parent's comm": _write("/proc/1/comm"),
            "etc": _write("/etc/kernelproof-probe"),
        },
    )
    assert results["name thread"] == {"ok": "'cuda-worker'"}, results
    assert "error" in results["parent's comm"], results
    assert "error" in results["etc"], results
