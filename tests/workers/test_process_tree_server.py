"""The serving process of a worker is remembered only once it is known: a sandboxed worker
sampled before its pid namespace exists answers with its root, which only waits."""

from __future__ import annotations

import os

from kernelproof.workers.process_tree import ProcessTree


def test_the_root_as_server_is_not_remembered():
    tree = ProcessTree(os.getpid())
    assert tree._serving() == os.getpid()
    assert tree._server == 0, "asked again later, a sandboxed worker's pid 2 must be found"
    running, waiting = tree.main_schedstat_s()
    assert running > 0 and waiting >= 0
