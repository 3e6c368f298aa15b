"""The results store's schema version: what an older store is upgraded by, and what a store from
a newer kernelproof is refused with.

Version 1 is the store as ``bench`` made it before it kept a version (two tables, no
``kernelproof_store_meta``). Each later version lists its additive steps below; an upgrade
adds, never rewrites or drops, so a store keeps every row it held. ``bench`` and the read-only
commands upgrade a store when they open it; the server does the same through its Alembic
migrations (``serve/migrations/versions/0004_environment.py``), which end at the same version.
A store whose version is newer than this kernelproof's is refused before anything touches it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Engine, String, inspect, text
from sqlalchemy.exc import DatabaseError, IntegrityError
from sqlalchemy.types import TypeEngine

from kernelproof.errors import UsageError

__all__ = [
    "META_TABLE",
    "STORE_SCHEMA_VERSION",
    "VERSION_KEY",
    "added_columns",
    "check_version",
    "stored_version",
    "upgrade",
]

#: The schema version this kernelproof writes and reads.
STORE_SCHEMA_VERSION = 2

#: The table holding the version (one row per key).
META_TABLE = "kernelproof_store_meta"

#: The key of the version in :data:`META_TABLE`.
VERSION_KEY = "schema_version"

#: Columns added to existing tables, per version: (table, column, type). Version 2 binds each
#: verification to its environment (the digest of its binding components, and the components).
ADDED_COLUMNS: dict[int, list[tuple[str, str, TypeEngine[Any]]]] = {
    2: [
        ("kernelproof_verifications", "environment_digest", String(16)),
        ("kernelproof_verifications", "environment", JSON()),
    ],
}


def added_columns(up_to: int = STORE_SCHEMA_VERSION) -> list[tuple[str, str, TypeEngine[Any]]]:
    """Every column added after version 1, up to ``up_to``."""
    return [
        column
        for version in sorted(ADDED_COLUMNS)
        if version <= up_to
        for column in ADDED_COLUMNS[version]
    ]


def stored_version(engine: Engine) -> int | None:
    """The store's schema version: its meta row; 1 for a store made before versions were
    kept; ``None`` for an empty database."""
    tables = set(inspect(engine).get_table_names())
    if META_TABLE not in tables:
        return 1 if "kernelproof_verifications" in tables else None
    with engine.connect() as connection:
        value = connection.execute(
            text(f"SELECT value FROM {META_TABLE} WHERE name = :name"), {"name": VERSION_KEY}
        ).scalar()
    try:
        return int(value) if value is not None else 1
    except ValueError:
        return 1


def check_version(engine: Engine, url: str) -> int | None:
    """The store's version; a :class:`UsageError` when a newer kernelproof wrote it."""
    version = stored_version(engine)
    if version is not None and version > STORE_SCHEMA_VERSION:
        raise UsageError(
            f"the results store {url!r} has schema version {version}, written by a newer "
            f"kernelproof; this one reads versions up to {STORE_SCHEMA_VERSION}. Upgrade "
            "kernelproof (pip install -U kernelproof) to use it, or pass --db with another "
            "store; nothing in it was changed"
        )
    return version


def upgrade(engine: Engine, url: str) -> None:
    """Bring a store whose tables exist to :data:`STORE_SCHEMA_VERSION`: add the missing
    columns, then record the version. Safe against a concurrent upgrade by another process
    (a column it already added is taken as added)."""
    version = check_version(engine, url)
    if version == STORE_SCHEMA_VERSION:
        return
    for table, column, kind in added_columns():
        _add_column(engine, url, table, column, kind)
    _write_version(engine)


def _add_column(engine: Engine, url: str, table: str, column: str, kind: TypeEngine[Any]) -> None:
    if column in {c["name"] for c in inspect(engine).get_columns(table)}:
        return
    type_sql = kind.compile(dialect=engine.dialect)
    try:
        with engine.begin() as connection:
            connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} {type_sql}"))
    except DatabaseError as exc:
        if column in {c["name"] for c in inspect(engine).get_columns(table)}:
            return  # another process added it meanwhile
        raise UsageError(
            f"cannot upgrade the results store {url!r} to schema version "
            f"{STORE_SCHEMA_VERSION} (adding {table}.{column}): {exc.orig}; is it "
            "read-only? Open it once with write access"
        ) from None


def _write_version(engine: Engine) -> None:
    values = {"name": VERSION_KEY, "value": str(STORE_SCHEMA_VERSION)}
    with engine.begin() as connection:
        updated = connection.execute(
            text(f"UPDATE {META_TABLE} SET value = :value WHERE name = :name"), values
        ).rowcount
    if updated:
        return
    try:
        with engine.begin() as connection:
            connection.execute(
                text(f"INSERT INTO {META_TABLE} (name, value) VALUES (:name, :value)"), values
            )
    except IntegrityError:
        pass  # another process recorded it meanwhile
