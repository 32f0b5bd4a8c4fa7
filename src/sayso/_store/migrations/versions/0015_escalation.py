"""Escalation timers: when each open request's next escalation step is due, and how many steps fired.

`escalate_at` is the durable timer the sweep reads (through `ix_requests_escalating`, a partial index
of open requests by due time, as `ix_requests_expiring` is for expiry); `escalations` counts the steps
that fired, and the conditional update that fires one (`escalations = :step`) makes it fire once
whichever replica sweeps. An outbox event's `step` says which step a `request.escalated` event reports.
Requests raised before this revision have no steps (`escalate_at` NULL).

Revision ID: 0015_escalation
Revises: 0014_steps
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_escalation"
down_revision = "0014_steps"
branch_labels = None
depends_on = None

_OPEN = sa.text("status = 'open'")


def upgrade() -> None:
    with op.batch_alter_table("requests") as batch:
        batch.add_column(sa.Column("escalate_at", sa.Float, nullable=True))
        batch.add_column(sa.Column("escalations", sa.Integer, nullable=False, server_default="0"))
    with op.batch_alter_table("outbox") as batch:
        batch.add_column(sa.Column("step", sa.Integer, nullable=True))
    op.create_index("ix_requests_escalating", "requests", ["escalate_at"], sqlite_where=_OPEN, postgresql_where=_OPEN)


def downgrade() -> None:
    op.drop_index("ix_requests_escalating", table_name="requests")
    with op.batch_alter_table("outbox") as batch:
        batch.drop_column("step")
    with op.batch_alter_table("requests") as batch:
        batch.drop_column("escalations")
        batch.drop_column("escalate_at")
