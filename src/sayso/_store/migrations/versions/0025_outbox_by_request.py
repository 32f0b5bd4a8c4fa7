"""A request's earlier events found from the request, so that each receiver gets a request's events in order.

A delivery is not claimed while an earlier event of the same request to the same hook is in flight
(say, a request's decision while another replica still sends its opening). Claiming asks
that of each due delivery: `ix_outbox_request` answers it from the request's few events, not from
every pending delivery.

Revision ID: 0025_outbox_by_request
Revises: 0024_sweep_indexes
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0025_outbox_by_request"
down_revision = "0024_sweep_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_outbox_request", "outbox", ["request_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_outbox_request", table_name="outbox")
