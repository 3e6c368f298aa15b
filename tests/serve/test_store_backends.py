"""The results store `bench` and the server share, on SQLite and on a real PostgreSQL: a run's
reports round-trip, resume finds exactly the same candidate, machine and settings, a resumed
run holds a copy, and writers in several threads lose nothing."""

from __future__ import annotations

import threading

from kernelproof.serve.catalog import SuiteCatalog
from kernelproof.store.results import ResultsStore, settings_hash

from .conftest import SUITE, fake_report, fake_source

TASK = "level1/19_NewGELU"


def test_round_trip_resume_and_concurrent_writers(database_url):
    catalog = SuiteCatalog.read(SUITE, "quick", {"timing": False}, fingerprint="machine-1")
    source = fake_source(speedup=2.5, ci=(2.0, 3.0))
    report = fake_report(source, catalog, TASK)
    identity = catalog.identity(TASK, source)
    with ResultsStore(database_url) as store:
        first = store.start_run(suite="tasks", solutions="solutions", label="a")
        stored = store.add(first, TASK, 1, "19", 0, report)
        store.finish_run(first)
        assert store.report(stored) == report
        (row,) = store.verifications(first)
        assert (row.speedup, row.speedup_ci_low, row.speedup_ci_high) == (2.5, 2.0, 3.0)
        assert row.settings_hash == settings_hash(report.settings) == identity.settings_hash

        key = (
            identity.candidate_sha256,
            identity.reference_sha256,
            "machine-1",
            identity.settings_hash,
        )
        assert store.find_done(*key).id == stored
        assert store.find_done(*key[:2], "machine-2", key[3]) is None
        assert store.find_done("0" * 64, *key[1:]) is None

        second = store.start_run(suite="tasks", solutions="solutions", label="b")
        store.reuse(second, store.find_done(*key))
        assert [r.to_record() for r in store.verifications(second)] == [row.to_record()]

        def write(thread: int) -> None:
            for sample in range(5):
                store.add(second, f"t{thread}", 1, str(thread), sample, report)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(store.verifications(second)) == 1 + 4 * 5
        assert [r.label for r in store.runs()] == ["a", "b"]
