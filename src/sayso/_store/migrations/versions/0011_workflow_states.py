"""Workflows: the state of each workflow run (finished nodes' outputs, answers so far, what it waits on).

Revision ID: 0007_workflows
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_workflows"
down_revision = "0007_decision_via"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_states",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("workflow_states")
