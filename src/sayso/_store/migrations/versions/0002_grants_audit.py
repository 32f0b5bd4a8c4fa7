"""Remembered approvals (grants) and the hash-chained audit log.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
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
        "grants",
        sa.Column("grant_id", sa.String(64), primary_key=True),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("subject_key", sa.String(400), nullable=False),
        sa.Column("subject_label", sa.Text, nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("thread_id", sa.String(64), nullable=True),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("expires_at", sa.Float, nullable=True),
        sa.Column("revoked_at", sa.Float, nullable=True),
    )
    op.create_index("ix_grants_lookup", "grants", ["principal", "tool", "subject_key"])
    op.create_table(
        "audit",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("audit")
    op.drop_table("grants")
