"""The results store's tables, as ``kernelproof bench`` creates them.

A store that ``bench`` already created (its tables made by SQLAlchemy's ``create_all``, no
Alembic version yet) keeps its tables: only the missing ones are created, so pointing the server
at an existing store adopts it without touching a row.

Revision ID: 0001
Revises:
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "kernelproof_runs" not in existing:
        op.create_table(
            "kernelproof_runs",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("started_at", sa.DateTime, nullable=False),
            sa.Column("finished_at", sa.DateTime, nullable=True),
            sa.Column("suite", sa.Text, nullable=False),
            sa.Column("solutions", sa.Text, nullable=False),
            sa.Column("kernelproof_version", sa.String(64), nullable=False),
            sa.Column("fingerprint", sa.String(64), nullable=False),
            sa.Column("device", sa.String(256), nullable=False),
            sa.Column("settings", sa.JSON, nullable=False),
            sa.Column("status", sa.String(16), nullable=False),
            sa.Column("label", sa.Text, nullable=True),
        )
    if "kernelproof_verifications" not in existing:
        op.create_table(
            "kernelproof_verifications",
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column(
                "run_id",
                sa.Integer,
                sa.ForeignKey("kernelproof_runs.id", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column("task_key", sa.String(512), nullable=False),
            sa.Column("level", sa.Integer, nullable=True),
            sa.Column("problem", sa.String(256), nullable=False),
            sa.Column("sample", sa.Integer, nullable=False),
            sa.Column("candidate_path", sa.Text, nullable=True),
            sa.Column("candidate_sha256", sa.String(64), nullable=True),
            sa.Column("reference_sha256", sa.String(64), nullable=True),
            sa.Column("fingerprint", sa.String(64), nullable=False),
            sa.Column("device", sa.String(256), nullable=False),
            sa.Column("settings_hash", sa.String(64), nullable=False),
            sa.Column("verdict", sa.String(16), nullable=False),
            sa.Column("exit_code", sa.Integer, nullable=False),
            sa.Column("speedup", sa.Float, nullable=True),
            sa.Column("speedup_ci_low", sa.Float, nullable=True),
            sa.Column("speedup_ci_high", sa.Float, nullable=True),
            sa.Column("speedup_vs_compile", sa.Float, nullable=True),
            sa.Column("per_shape_speedups", sa.JSON, nullable=False),
            sa.Column("floor_clamped", sa.Boolean, nullable=False),
            sa.Column("duration_s", sa.Float, nullable=False),
            sa.Column("report_json", sa.Text, nullable=False),
            sa.Column("created_at", sa.DateTime, nullable=False),
        )
        op.create_index(
            "ix_kernelproof_verifications_run_id", "kernelproof_verifications", ["run_id"]
        )
        op.create_index(
            "ix_kernelproof_verifications_resume",
            "kernelproof_verifications",
            ["candidate_sha256", "reference_sha256", "fingerprint", "settings_hash"],
        )
        op.create_index(
            "ix_kernelproof_verifications_task",
            "kernelproof_verifications",
            ["task_key", "created_at"],
        )
        op.create_index(
            "ix_kernelproof_verifications_created", "kernelproof_verifications", ["created_at"]
        )


def downgrade() -> None:
    op.drop_table("kernelproof_verifications")
    op.drop_table("kernelproof_runs")
