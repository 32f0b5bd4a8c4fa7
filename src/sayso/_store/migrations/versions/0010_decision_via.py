"""Decisions remember the interface they came through (`via`: cli, rest, web, a2a, ag-ui, python).

Revision ID: 0007_decision_via
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_decision_via"
down_revision = "0009_outbox_13"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("via", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("via")
