"""A2A's task list read a page at a time from an index of top-level runs, not thread by thread.

`ListTasks` read every thread of the caller, then each thread's transcript and runs, and sorted
and paged in Python: about a second a page for a caller with 1,335 threads. The store now
answers a page with one keyset query; `ix_runs_top` holds the top-level runs (no delegate's) by
agent and last update, so a page of an agent's tasks is read backwards from the cursor's run.

Revision ID: 0026_top_runs_index
Revises: 0025_outbox_by_request
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026_top_runs_index"
down_revision = "0025_outbox_by_request"
branch_labels = None
depends_on = None

_WHERE = "parent_run_id IS NULL"


def upgrade() -> None:
    op.create_index(
        "ix_runs_top",
        "runs",
        ["agent", "updated_at", "run_id"],
        sqlite_where=sa.text(_WHERE),
        postgresql_where=sa.text(_WHERE),
    )


def downgrade() -> None:
    op.drop_index("ix_runs_top", table_name="runs")
