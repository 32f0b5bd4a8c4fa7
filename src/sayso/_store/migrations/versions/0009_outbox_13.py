"""The outbox: events written in the same commit as the change they report, and their webhook deliveries.

`outbox` holds one row per request opened or decided, written by the store verb that made the
change; `deliveries` holds one row per event and webhook, claimed by one sender at a time, so
whichever server runs delivers it (at least once, surviving restarts). Changes made before this
revision have no events: nothing old is sent.

Revision ID: 0009_outbox_13
Revises: 0008_audit_anchor_13
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_outbox_13"
down_revision = "0008_audit_anchor_13"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "outbox",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("event_id", sa.String(64), nullable=False, unique=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("request_id", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("fanned_out", sa.Boolean, nullable=False),
    )
    op.create_index("ix_outbox_waiting", "outbox", ["fanned_out", "seq"])
    op.create_table(
        "deliveries",
        sa.Column("delivery_id", sa.String(100), primary_key=True),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("hook", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("next_attempt_at", sa.Float, nullable=False),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_until", sa.Float, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("finished_at", sa.Float, nullable=True),
    )
    op.create_index("ix_deliveries_due", "deliveries", ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_table("deliveries")
    op.drop_table("outbox")
