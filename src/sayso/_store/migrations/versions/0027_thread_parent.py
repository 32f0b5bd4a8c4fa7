"""A delegate's thread names the run whose call started it, so it is read by whoever reads that run.

A delegate's thread talks to the delegate agent; an approver of the chat's agent, who reads the
delegate's run, was told its thread did not exist. `threads.parent_run_id` says whose it is;
the threads of delegates started before are filled in from their runs.

Revision ID: 0027_thread_parent
Revises: 0026_top_runs_index
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_thread_parent"
down_revision = "0026_top_runs_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.add_column(sa.Column("parent_run_id", sa.String(64), nullable=True))
    op.execute(
        "UPDATE threads SET parent_run_id = ("
        "SELECT runs.parent_run_id FROM runs WHERE runs.thread_id = threads.thread_id "
        "AND runs.parent_run_id IS NOT NULL ORDER BY runs.created_at, runs.run_id LIMIT 1)"
    )


def downgrade() -> None:
    with op.batch_alter_table("threads") as batch:
        batch.drop_column("parent_run_id")
