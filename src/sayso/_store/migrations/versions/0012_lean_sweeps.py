"""Indexes that keep a long-lived server's sweeps reading only what they act on.

`ix_requests_expiring` holds the open requests by expiry time (a partial index: decided requests
are not in it), so the expiry sweep ranges over the requests that expired instead of reading every
open one.

Revision ID: 0012_lean_sweeps
Revises: 0007_workflows
Create Date: 2026-12-14
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


def downgrade() -> None:
    op.drop_index("ix_requests_expiring", table_name="requests")
