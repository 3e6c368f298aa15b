"""Alembic's environment for the results store's database (the store's and the server's
revisions): always run through
:func:`kernelproof.serve.database.migrate`, which hands over an open connection."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "run the server's migrations through kernelproof.serve.database.migrate, "
        "which passes the store's connection; `alembic` on the command line has "
        "no URL to use"
    )
context.configure(
    connection=connection, target_metadata=None, render_as_batch=connection.dialect.name == "sqlite"
)
with context.begin_transaction():
    context.run_migrations()
