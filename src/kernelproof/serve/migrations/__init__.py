"""Alembic revisions of the server's own tables (the submission queue), in the same revision
chain as the store's (kernelproof.store.migrations)."""
