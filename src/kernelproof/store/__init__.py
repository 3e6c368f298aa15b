"""The results store, a bottom layer: verification records (``results``, SQLAlchemy; SQLite by
default, any URL such as PostgreSQL), the version of its tables (``schema_version``), the
reference answer archive (``answer_archive``), metrics over stored records (``metrics``) and the
Alembic migrations of the store's own tables (``migrations``). It imports no package that runs
verifications: the session, suite, serve and workers packages import it."""
