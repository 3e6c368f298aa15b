"""Whether the server may listen beyond loopback: only where the candidate sandbox holds.

Submissions over HTTP are code from strangers. On loopback only the machine's own users can
send them; anywhere else, the OS sandbox is all that stands between a submission and the
machine. So before binding a non-loopback address, the server forks a process that enters the
sandbox exactly as a candidate worker does, and refuses to start if any mechanism is missing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import tempfile

from kernelproof.errors import UsageError

__all__ = ["check_exposure", "is_loopback", "sandbox_gaps"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def sandbox_gaps() -> dict[str, str]:
    """The sandbox mechanisms this machine cannot enforce, with the kernel's reason; empty when
    a candidate worker here would get every one (see :mod:`kernelproof.sandbox`)."""
    from kernelproof import sandbox
    from kernelproof.controller.confinement import REQUIRED

    with tempfile.TemporaryDirectory(prefix="kernelproof-sandbox-probe-") as scratch:
        plan = sandbox.SandboxPlan(scratch=scratch, readable=sandbox.readable_defaults())
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child enters the sandbox and reports
            try:
                os.close(read)
                state = sandbox.enter(plan)
                os.write(
                    write,
                    json.dumps({"enforced": state.enforced, "missing": state.missing}).encode(),
                )
            finally:
                os._exit(0)
        os.close(write)
        chunks = []
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
        os.close(read)
        os.waitpid(pid, 0)
    if not chunks:
        return {"sandbox": "the probe process died before it reported"}
    state = json.loads(b"".join(chunks))
    entered = set(state["enforced"])
    if any(m.startswith("landlock-abi-") for m in entered):
        entered.add("landlock")
    return {m: state["missing"].get(m, "not entered") for m in REQUIRED if m not in entered}


def check_exposure(host: str, gaps: dict[str, str] | None, sandboxed: bool) -> None:
    """Refuse (:class:`UsageError`) a non-loopback ``host`` unless every candidate runs in a
    complete sandbox: ``sandboxed`` says the settings keep it on, ``gaps`` is
    :func:`sandbox_gaps` (``None``: not probed, which only loopback allows)."""
    if is_loopback(host):
        return
    if not sandboxed:
        raise UsageError(
            f"refusing --host {host}: the settings turn the candidate sandbox off "
            "(sandbox=False), so submissions from the network would run "
            "unconfined; serve on 127.0.0.1, or drop that setting"
        )
    if gaps is None or gaps:
        missing = "; ".join(f"{m} ({why})" for m, why in (gaps or {}).items()) or "not probed"
        raise UsageError(
            f"refusing --host {host}: the candidate sandbox is incomplete on this "
            f"machine ({missing}), so submissions from the network could reach it. "
            "Serve on 127.0.0.1 (the default), or run on a Linux kernel with user "
            "namespaces, Landlock and seccomp (see docs/security.md)"
        )
