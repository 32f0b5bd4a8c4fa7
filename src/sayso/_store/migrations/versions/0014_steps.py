"""The step journal: one row per step a tool or workflow node took (`sayso.step`), so it runs once per run.

Revision ID: 0014_steps
Revises: 0013_lease_holder
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_steps"
down_revision = "0013_lease_holder"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "steps",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("scope", sa.String(200), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("occurrence", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("result", sa.LargeBinary, nullable=True),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("finished_at", sa.Float, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("steps")
