"""The server listens beyond loopback only where the candidate sandbox is complete."""

from __future__ import annotations

import pytest

from kernelproof.errors import UsageError
from kernelproof.serve.exposure import check_exposure, is_loopback, sandbox_gaps


def test_loopback_addresses_are_recognised():
    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.1.2.3", "example.org"]))


def test_loopback_needs_no_sandbox_probe():
    check_exposure("127.0.0.1", None, sandboxed=False)


def test_a_public_address_is_refused_while_the_sandbox_is_incomplete():
    with pytest.raises(
        UsageError, match=r"refusing --host 0.0.0.0.*landlock \(not in this kernel\)"
    ):
        check_exposure("0.0.0.0", {"landlock": "not in this kernel"}, sandboxed=True)
    with pytest.raises(UsageError, match="sandbox=False"):
        check_exposure("0.0.0.0", {}, sandboxed=False)
    with pytest.raises(UsageError, match="not probed"):
        check_exposure("0.0.0.0", None, sandboxed=True)
    check_exposure("0.0.0.0", {}, sandboxed=True)


def test_the_probe_enters_the_whole_sandbox_on_this_machine():
    # As tests/workers/test_sandbox.py asserts, this machine (and CI) enforce every mechanism.
    assert sandbox_gaps() == {}
