"""The server's database: the results store, brought to the newest schema by Alembic.

``bench`` creates the store's tables itself; the server instead runs the migrations: the
store's own (``kernelproof/store/migrations``: its tables, adopted when they exist) and the
server's (``kernelproof/serve/migrations``: the submissions table), one revision chain over both
folders, so a store shared by both is upgraded in place as the schema grows.
"""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy.engine import make_url

from kernelproof.errors import UsageError
from kernelproof.store import migrations as store_migrations
from kernelproof.store.results import ResultsStore

__all__ = ["HEAD", "migrate", "open_store", "private_sqlite_file", "revision"]

#: Alembic's environment and the store's revisions, shipped inside the package.
MIGRATIONS = Path(store_migrations.__file__).resolve().parent

#: The folders of revision scripts: the store's tables, then the server's own.
VERSION_FOLDERS = (MIGRATIONS / "versions", Path(__file__).resolve().parent / "migrations")


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", os.pathsep.join(map(str, VERSION_FOLDERS)))
    return config


#: The newest revision: what :func:`migrate` brings a database to.
HEAD: str = ScriptDirectory.from_config(_config()).get_current_head() or ""


def migrate(store: ResultsStore) -> None:
    """Upgrade the store's database to :data:`HEAD`, in one transaction."""
    config = _config()
    try:
        with store.engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except CommandError as exc:
        if "Can't locate revision" not in str(exc):
            raise
        raise UsageError(
            f"the results store {store.url!r} was migrated by a newer kernelproof (its "
            f"revision is not one this kernelproof knows; the newest here is {HEAD}). Upgrade "
            "kernelproof (pip install -U kernelproof) to serve it; nothing in it was "
            "changed"
        ) from None


def revision(store: ResultsStore) -> str | None:
    """The database's current revision, or ``None`` before any migration."""
    with store.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def open_store(url: str) -> ResultsStore:
    """The results store at ``url``, migrated to :data:`HEAD`. A SQLite file it creates is
    readable by its owner only (mode 0600, as the tokens file): it holds every user's
    source; SQLite gives its journal files the same mode."""
    private_sqlite_file(url)
    store = ResultsStore(url, create_tables=False)
    migrate(store)
    return store


def private_sqlite_file(url: str) -> None:
    """Create the SQLite file of ``url`` with mode 0600 when it does not exist yet (before
    SQLite would create it with the umask's, usually world-readable, mode)."""
    parsed = make_url(url)
    database = parsed.database
    if (
        parsed.get_backend_name() != "sqlite"
        or not database
        or database == ":memory:"
        or database.startswith("file:")
    ):
        return
    try:
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:
        pass  # a folder that does not exist: the store's own error says so
