"""Whether the A2A call that reported a pause activated kagent's HITL extension.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "a2a_pauses",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("pause_id", sa.String(64), nullable=False),
        sa.Column("activated", sa.Boolean, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("a2a_pauses")
