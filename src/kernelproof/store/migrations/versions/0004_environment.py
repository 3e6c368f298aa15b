"""Each verification bound to its environment, and rechecks linked to what they re-prove.

The store's schema version 2 (``store/schema_version.py``): ``environment_digest`` and
``environment`` on the verifications, the ``kernelproof_rechecks`` links, and the
``kernelproof_store_meta`` table that records the version. A store ``bench`` already upgraded
(or created at version 2) is adopted as it is: every step checks first.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from kernelproof.store.schema_version import (
    META_TABLE,
    STORE_SCHEMA_VERSION,
    VERSION_KEY,
    added_columns,
)

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    inspector = sa.inspect(bind)
    tables = set(inspector.get_table_names())
    for table, column, kind in added_columns(2):
        if column not in {c["name"] for c in inspector.get_columns(table)}:
            op.add_column(table, sa.Column(column, kind, nullable=True))
    if "kernelproof_rechecks" not in tables:
        op.create_table(
            "kernelproof_rechecks",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column(
                "run_id",
                sa.Integer,
                sa.ForeignKey("kernelproof_runs.id", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column(
                "original_id",
                sa.Integer,
                sa.ForeignKey("kernelproof_verifications.id", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column(
                "verification_id",
                sa.Integer,
                sa.ForeignKey("kernelproof_verifications.id", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column("reasons", sa.JSON, nullable=False),
            sa.Column("created_at", sa.DateTime, nullable=False),
        )
        for column in ("run_id", "original_id", "verification_id"):
            op.create_index(f"ix_kernelproof_rechecks_{column}", "kernelproof_rechecks", [column])
    if META_TABLE not in tables:
        op.create_table(
            META_TABLE,
            sa.Column("name", sa.String(64), primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
        )
    meta = sa.table(META_TABLE, sa.column("name", sa.String), sa.column("value", sa.Text))
    bind.execute(sa.delete(meta).where(meta.c.name == VERSION_KEY))
    bind.execute(sa.insert(meta).values(name=VERSION_KEY, value=str(STORE_SCHEMA_VERSION)))


def downgrade() -> None:
    op.drop_table("kernelproof_rechecks")
    op.drop_table(META_TABLE)
    for table, column, _ in reversed(added_columns(2)):
        op.drop_column(table, column)
