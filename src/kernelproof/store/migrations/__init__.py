"""Alembic migrations of the results store's own tables (run by kernelproof.serve.database)."""
