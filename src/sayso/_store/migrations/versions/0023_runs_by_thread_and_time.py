"""Runs indexed by thread and time, in place of by thread alone: a long thread's page reads only its own runs.

A transcript page reads the runs that failed among the batches it shows, and the thread's title its
first run; by thread alone, both read every run of the thread (one a message: thousands in a long
thread). By (thread, time) each reads the few it needs, and the index serves every lookup by thread
the old one did, so a run still adds one entry, not two.

Revision ID: 0023_runs_by_thread_and_time
Revises: 0022_thread_list_indexes
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0023_runs_by_thread_and_time"
down_revision = "0022_thread_list_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_runs_thread_created", "runs", ["thread_id", "created_at"])
    op.drop_index("ix_runs_thread_id", table_name="runs")


def downgrade() -> None:
    op.create_index("ix_runs_thread_id", "runs", ["thread_id"])
    op.drop_index("ix_runs_thread_created", table_name="runs")
