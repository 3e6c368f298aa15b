"""The queue in the database, on SQLite and on a real PostgreSQL: each submission is claimed
and finished exactly once, a dead worker's submission is requeued once and then failed with
the reason, a restart resumes, and identical submissions reuse one result."""

from __future__ import annotations

import threading

import pytest

from kernelproof.serve.catalog import SuiteCatalog
from kernelproof.serve.database import HEAD, open_store, revision
from kernelproof.serve.queue import MAX_ATTEMPTS, SubmissionQueue
from kernelproof.serve.supervisor import ThreadWorkers
from kernelproof.store.results import ResultsStore

from .conftest import SUITE, fake_report, fake_source, fake_verify

TASK = "level1/19_NewGELU"


@pytest.fixture(scope="module")
def catalog() -> SuiteCatalog:
    return SuiteCatalog.read(SUITE, "quick", {"timing": False}, fingerprint="test-machine")


@pytest.fixture
def queue(database_url: str):
    store = open_store(database_url)
    yield SubmissionQueue(store)
    store.close()


def _run(queue: SubmissionQueue) -> int:
    return queue.store.start_run(suite="tasks", solutions="serve", label="test")


def _submit(queue, catalog, source: str, token: str = "alice"):
    return queue.submit(token, TASK, source, catalog.identity(TASK, source))


def test_migrations_reach_head_and_adopt_a_store_bench_made(database_url):
    bench_store = ResultsStore(database_url)  # create_all, as `bench` does
    run = bench_store.start_run(suite="s", solutions="t")
    bench_store.close()
    store = open_store(database_url)
    assert revision(store) == HEAD
    assert [r.id for r in store.runs()] == [run]  # the bench run survived the migration
    store.close()
    again = open_store(database_url)  # a second start is a no-op
    assert revision(again) == HEAD
    again.close()


def test_concurrent_workers_claim_each_submission_exactly_once(queue, catalog):
    ids = {_submit(queue, catalog, fake_source(tag=str(i))).id for i in range(24)}
    claimed: list[int] = []
    lock = threading.Lock()

    def drain(worker: str) -> None:
        while (claim := queue.claim(worker)) is not None:
            with lock:
                claimed.append(claim.id)

    threads = [threading.Thread(target=drain, args=(f"w{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == sorted(ids)
    assert queue.status_counts()["running"] == len(ids)


def test_a_dead_workers_submission_is_requeued_once_then_failed_with_the_reason(queue, catalog):
    submission = _submit(queue, catalog, fake_source())
    first = queue.claim("host:1")
    assert first.id == submission.id and first.attempt == 1
    assert queue.abandon("host:1", "its worker host:1 killed by SIGKILL") == [submission.id]
    requeued = queue.get(submission.id)
    assert requeued.status == "queued" and "killed by SIGKILL" in requeued.reason
    second = queue.claim("host:2")
    assert second.id == submission.id and second.attempt == MAX_ATTEMPTS
    queue.abandon("host:2", "its worker host:2 killed by SIGKILL")
    failed = queue.get(submission.id)
    assert failed.status == "failed"
    assert f"every one of its {MAX_ATTEMPTS} attempts" in failed.reason
    assert "host:2 killed by SIGKILL" in failed.reason
    assert queue.claim("host:3") is None


def test_a_requeued_submission_is_stored_once_even_if_its_old_worker_finishes(queue, catalog):
    run = _run(queue)
    source = fake_source(speedup=2.0, ci=(1.8, 2.2))
    submission = _submit(queue, catalog, source)
    slow = queue.claim("slow:1")
    queue.abandon("slow:1", "no heartbeat")  # presumed dead, but it is only slow
    fresh = queue.claim("fresh:2")
    report = fake_report(source, catalog, TASK)
    assert queue.finish(fresh, "fresh:2", run, 1, "19", report)
    assert not queue.finish(slow, "slow:1", run, 1, "19", report)  # too late: nothing stored
    assert len(queue.store.verifications(run)) == 1
    done = queue.get(submission.id)
    assert done.status == "done" and done.verification_id is not None


def test_stale_heartbeats_are_abandoned_and_live_ones_kept(queue, catalog):
    _submit(queue, catalog, fake_source(tag="a"))
    _submit(queue, catalog, fake_source(tag="b"))
    stale, live = queue.claim("gone:1"), queue.claim("alive:2")
    assert queue.abandon_stale(older_than_s=3600) == []
    assert queue.heartbeat(live.id, "alive:2")
    assert not queue.heartbeat(live.id, "someone-else:3")
    assert sorted(queue.abandon_stale(older_than_s=0)) == sorted([stale.id, live.id])
    assert queue.get(stale.id).status == "queued"


def test_a_stopped_server_releases_its_claims_without_spending_an_attempt(queue, catalog):
    submission = _submit(queue, catalog, fake_source())
    queue.claim("host:9")
    assert queue.release("host:9", "the server stopped") == [submission.id]
    again = queue.claim("host:10")
    assert again.id == submission.id and again.attempt == 1


def test_identical_submissions_wait_for_one_verification_then_reuse_its_result(queue, catalog):
    run = _run(queue)
    source = fake_source(speedup=1.5, ci=(1.4, 1.6))
    original = _submit(queue, catalog, source)
    twin = _submit(queue, catalog, source, token="bob")
    assert twin.status == "queued" and twin.duplicate_of == original.id
    claim = queue.claim("w:1")
    assert claim.id == original.id and queue.claim("w:2") is None  # the twin is never claimed
    assert queue.finish(claim, "w:1", run, 1, "19", fake_report(source, catalog, TASK))
    shared = queue.get(twin.id)
    assert shared.status == "done" and shared.reused
    assert shared.verification_id == queue.get(original.id).verification_id
    later = _submit(queue, catalog, source, token="carol")  # after the fact: done at once
    assert later.status == "done" and later.reused
    assert later.verification_id == shared.verification_id
    different = _submit(queue, catalog, fake_source(speedup=1.5, tag="x"))
    assert different.status == "queued" and different.duplicate_of is None


def test_a_restart_resumes_the_queue(database_url, catalog):
    store = open_store(database_url)
    queue = SubmissionQueue(store)
    ids = [_submit(queue, catalog, fake_source(tag=str(i))).id for i in range(3)]
    queue.claim("old-server:1")  # running when the server died
    store.close()

    store = open_store(database_url)  # the restarted server
    queue = SubmissionQueue(store)
    queue.abandon_stale(older_than_s=0)
    run = _run(queue)
    workers = ThreadWorkers(queue, catalog, run, fake_verify(catalog), count=2)
    workers.start()
    try:
        for _ in range(200):
            if queue.status_counts()["done"] == 3:
                break
            threading.Event().wait(0.05)
    finally:
        workers.stop()
    assert [queue.get(i).status for i in ids] == ["done"] * 3
    assert len(store.verifications(run)) == 3
    store.close()


def test_a_zombie_worker_counts_as_gone_at_start():
    # A worker killed with its server is reparented to whoever reaps orphans; until then (or
    # forever, under an init that does not reap) it is a zombie that kill(pid, 0) still
    # finds. Its submission must be recovered at start, not after a stale heartbeat.
    import os
    import subprocess
    import sys
    import time

    from kernelproof.serve.supervisor import _alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # exited, not yet reaped: a zombie
        with open(f"/proc/{child.pid}/stat") as stat:
            if stat.read().rpartition(")")[2].split()[0] == "Z":
                break
        time.sleep(0.01)
    try:
        os.kill(child.pid, 0)  # what the check relied on alone: it still finds the zombie
        assert not _alive(child.pid)
        assert _alive(os.getpid())
    finally:
        child.wait()
