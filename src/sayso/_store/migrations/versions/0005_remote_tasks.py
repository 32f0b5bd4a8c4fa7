"""Remote delegates: the A2A task behind each proxy run.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "remote_tasks",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("context_id", sa.String(200), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("remote_tasks")
