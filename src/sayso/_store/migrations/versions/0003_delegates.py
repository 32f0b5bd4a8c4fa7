"""Delegate runs: a run may belong to a parent run's tool call, with its agent path.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("parent_run_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("parent_call_id", sa.String(200), nullable=True))
        batch.add_column(sa.Column("agent_path", sa.String(400), nullable=True))
        batch.create_index("ix_runs_parent_run_id", ["parent_run_id"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_parent_run_id")
        batch.drop_column("agent_path")
        batch.drop_column("parent_call_id")
        batch.drop_column("parent_run_id")
