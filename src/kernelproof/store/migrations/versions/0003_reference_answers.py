"""The reference's remembered answers, kept across sessions (``kernelproof.Session(store=)``).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ``bench`` makes this table itself when it first stores an answer: adopted as it is.
    if "kernelproof_reference_answers" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "kernelproof_reference_answers",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("task_key", sa.String(64), nullable=False),
        sa.Column("code", sa.String(64), nullable=False),
        sa.Column("answer_key", sa.String(64), nullable=False),
        sa.Column("reply", sa.Text, nullable=False),
        sa.Column("tensors", sa.LargeBinary, nullable=False),
        sa.Column("nbytes", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
    )
    op.create_index(
        "ix_kernelproof_reference_answers_key",
        "kernelproof_reference_answers",
        ["task_key", "code", "answer_key"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_table("kernelproof_reference_answers")
