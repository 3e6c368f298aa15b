"""The store's schema version: an older store is upgraded in place (nothing lost), a newer one
is refused before anything touches it; rechecks are linked to the verdicts they re-prove."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from alembic import command

from kernelproof.errors import UsageError
from kernelproof.serve.database import HEAD, _config, migrate, revision
from kernelproof.store.results import ResultsStore
from kernelproof.store.schema_version import META_TABLE, STORE_SCHEMA_VERSION, stored_version

from .test_store import make_report


def _v1_store(tmp_path: Path) -> str:
    """A store as kernelproof made it before versions were kept: revision 0001's tables (what
    ``bench``'s create_all made then), one run and one verification in it."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    store = ResultsStore(url, create_tables=False)
    config = _config()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.exec_driver_sql("DROP TABLE alembic_version")
    store.close()
    with sqlite3.connect(tmp_path / "old.db") as db:
        db.execute(
            "INSERT INTO kernelproof_runs (id, started_at, suite, solutions, "
            "kernelproof_version, fingerprint, device, settings, status) VALUES "
            "(1, '2026-01-01 00:00:00', 's', 'd', '0.0.9', 'fp', 'cpu', '{}', "
            "'finished')"
        )
        db.execute(
            "INSERT INTO kernelproof_verifications (run_id, task_key, problem, sample, "
            "fingerprint, device, settings_hash, verdict, exit_code, "
            "per_shape_speedups, floor_clamped, duration_s, report_json, created_at) "
            "VALUES (1, 'level1/3_Softmax', '3', 0, 'fp', 'cpu', 'h', 'verified', 0, "
            "'{}', 0, 1.0, ?, '2026-01-01 00:00:00')",
            (make_report().to_json(),),
        )
    return url


def _columns(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[1] for row in db.execute("PRAGMA table_info(kernelproof_verifications)")}


def test_an_older_store_is_upgraded_in_place_and_keeps_every_row(tmp_path: Path) -> None:
    url = _v1_store(tmp_path)
    assert "environment" not in _columns(tmp_path / "old.db")
    with ResultsStore(url, must_exist=True) as store:
        assert stored_version(store.engine) == STORE_SCHEMA_VERSION
        [row] = store.verifications(1)
        assert row.environment is None and row.environment_digest is None  # not rewritten
        assert store.report(row.id).verdict.value == "verified"
        run_id = store.start_run(suite="s", solutions="d")
        new_id = store.add(run_id, "level1/3_Softmax", 1, 3, 0, make_report())
        store.link_recheck(run_id, row.id, new_id, [{"component": "torch"}])
        [slot] = store.proof_heads()
        assert (slot.original.id, slot.head.id, slot.link.reasons) == (
            row.id,
            new_id,
            [{"component": "torch"}],
        )
    assert {"environment", "environment_digest"} <= _columns(tmp_path / "old.db")


def test_the_server_s_migrations_upgrade_an_older_store_too(tmp_path: Path) -> None:
    url = _v1_store(tmp_path)
    store = ResultsStore(url, create_tables=False)
    migrate(store)
    assert revision(store) == HEAD and stored_version(store.engine) == STORE_SCHEMA_VERSION
    assert [v.task_key for v in store.verifications(1)] == ["level1/3_Softmax"]
    store.close()


def test_a_store_from_a_newer_kernelproof_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    ResultsStore(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {META_TABLE} SET value = '99'")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for options in ({}, {"must_exist": True}, {"create_tables": False}):
        with pytest.raises(
            UsageError,
            match=r"schema version 99, written by a newer "
            r"kernelproof.*reads versions up to 2.*pip "
            r"install -U kernelproof.*nothing in it was changed",
        ):
            ResultsStore(f"sqlite:///{path}", **options)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_store_migrated_by_a_newer_server_is_refused_with_the_fix(tmp_path: Path) -> None:
    store = ResultsStore(f"sqlite:///{tmp_path / 'served.db'}", create_tables=False)
    migrate(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0099'")
    with pytest.raises(UsageError, match="migrated by a newer kernelproof.*pip install -U"):
        migrate(store)
    store.close()


def test_rows_record_their_environment_and_heads_follow_rechecks(tmp_path: Path) -> None:
    with ResultsStore(f"sqlite:///{tmp_path / 'r.db'}") as store:
        run = store.start_run(suite="s", solutions="d")
        first = store.add(run, "a", None, "a", 0, make_report())
        other = store.add(run, "b", None, "b", 0, make_report(candidate="d" * 64))
        [row, _] = store.verifications(run)
        assert row.environment["components"]["torch"] == "2.x"
        assert len(row.environment_digest) == 16
        recheck_run = store.start_run(suite="recheck", solutions="")
        second = store.add(recheck_run, "a", None, "a", 0, make_report())
        store.link_recheck(recheck_run, first, second, [])
        third = store.add(recheck_run, "a", None, "a", 0, make_report())
        store.link_recheck(recheck_run, second, third, [])  # a second environment change
        heads = {
            slot.original.task_key: (slot.original.id, slot.head.id) for slot in store.proof_heads()
        }
        assert heads == {"a": (first, third), "b": (other, other)}
        assert [s.head.id for s in store.proof_heads(run_id=run, task_key="b")] == [other]
        # A later bench verification of the slot is its new proof; the rechecks are history.
        later = store.add(
            store.start_run(suite="s", solutions="d"), "a", None, "a", 0, make_report()
        )
        assert {s.original.task_key: s.head.id for s in store.proof_heads()}["a"] == later
