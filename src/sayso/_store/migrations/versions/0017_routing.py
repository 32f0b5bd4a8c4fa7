"""Routing: who may decide a routed request (`request_deciders`), and the votes cast on it (`votes`).

`requests.routed` says a request's rule names approvers, so the inbox lists it to its deciders
only; `votes` holds each vote of a request that needs several approvals, keyed by its position, so
two replicas counting the same vote collide on the key instead of both counting (docs/guides/routing.md).

Revision ID: 0017_routing
Revises: 0016_documents
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_routing"
down_revision = "0016_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("requests", sa.Column("routed", sa.Boolean, nullable=False, server_default=sa.false()))
    op.create_table(
        "request_deciders",
        sa.Column("request_id", sa.String(64), primary_key=True),
        sa.Column("principal", sa.String(200), primary_key=True),
    )
    op.create_index("ix_request_deciders_principal", "request_deciders", ["principal"])
    op.create_table(
        "votes",
        sa.Column("request_id", sa.String(64), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("principal", sa.String(200), nullable=False),
        sa.Column("voted_at", sa.Float, nullable=False),
        sa.Column("body", sa.LargeBinary, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("votes")
    op.drop_index("ix_request_deciders_principal", table_name="request_deciders")
    op.drop_table("request_deciders")
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("routed")
