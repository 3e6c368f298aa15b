"""The server's submissions: its queue.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "kernelproof_submissions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("token_name", sa.String(128), nullable=False),
        sa.Column("task_key", sa.String(512), nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("candidate_sha256", sa.String(64), nullable=False),
        sa.Column("reference_sha256", sa.String(64), nullable=False),
        sa.Column("settings_hash", sa.String(64), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("worker", sa.String(256), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime, nullable=True),
        sa.Column(
            "duplicate_of", sa.Integer, sa.ForeignKey("kernelproof_submissions.id"), nullable=True
        ),
        sa.Column("reused", sa.Boolean, nullable=False),
        sa.Column(
            "verification_id",
            sa.Integer,
            sa.ForeignKey("kernelproof_verifications.id", ondelete="SET NULL"),
            nullable=True,
        ),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("started_at", sa.DateTime, nullable=True),
        sa.Column("finished_at", sa.DateTime, nullable=True),
    )
    op.create_index(
        "ix_kernelproof_submissions_status", "kernelproof_submissions", ["status", "id"]
    )
    op.create_index(
        "ix_kernelproof_submissions_token", "kernelproof_submissions", ["token_name", "status"]
    )
    op.create_index(
        "ix_kernelproof_submissions_task", "kernelproof_submissions", ["task_key", "status"]
    )
    op.create_index(
        "ix_kernelproof_submissions_identity",
        "kernelproof_submissions",
        ["candidate_sha256", "reference_sha256", "fingerprint", "settings_hash"],
    )


def downgrade() -> None:
    op.drop_table("kernelproof_submissions")
