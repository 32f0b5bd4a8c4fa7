"""Indexes that keep a long-lived server's sweeps reading only what they act on.

`ix_requests_expiring` holds the open requests by expiry time (a partial index: decided requests
are not in it), so the expiry sweep ranges over the requests that expired instead of reading every
open one. The others let the outbox be pruned (`prune_outbox`) without reading what stays:
`ix_deliveries_settled` the settled deliveries by when they finished, `ix_outbox_age` events by age,
and `ix_deliveries_event` whether any delivery of an event is left. `ix_requests_run` and
`ix_requests_thread` find a run's requests (read whenever a delegate answers its coordinator) and a
thread's open ones (the inbox filtered by thread) without reading every request.

Revision ID: 0012_lean_sweeps
Revises: 0007_workflows
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_lean_sweeps"
down_revision = "0007_workflows"
branch_labels = None
depends_on = None

_OPEN = sa.text("status = 'open'")


def upgrade() -> None:
    op.create_index("ix_requests_expiring", "requests", ["expires_at"], sqlite_where=_OPEN, postgresql_where=_OPEN)
    op.create_index("ix_deliveries_settled", "deliveries", ["status", "finished_at"])
    op.create_index("ix_deliveries_event", "deliveries", ["event_id"])
    op.create_index("ix_outbox_age", "outbox", ["fanned_out", "created_at"])
    op.create_index("ix_requests_run", "requests", ["run_id"])
    op.create_index("ix_requests_thread", "requests", ["thread_id", "status"])


def downgrade() -> None:
    op.drop_index("ix_requests_thread", table_name="requests")
    op.drop_index("ix_requests_run", table_name="requests")
    op.drop_index("ix_outbox_age", table_name="outbox")
    op.drop_index("ix_deliveries_event", table_name="deliveries")
    op.drop_index("ix_deliveries_settled", table_name="deliveries")
    op.drop_index("ix_requests_expiring", table_name="requests")
