"""Indexes the thread list pages through: a principal's threads, and every thread, by (created_at, id).

The list was read newest first by sorting the whole `threads` table, for every page a web UI's
sidebar asked for; with these its pages are read backwards from the cursor's thread, so a store
with many threads lists its newest as fast as one with few.

Revision ID: 0022_thread_list_indexes
Revises: 0021_repair_client_tools
Create Date: 2026-12-07
"""

from __future__ import annotations

from alembic import op

revision = "0022_thread_list_indexes"
down_revision = "0021_repair_client_tools"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_threads_owner_created": ["owner", "created_at", "thread_id"],
    "ix_threads_created": ["created_at", "thread_id"],
}


def upgrade() -> None:
    for name, columns in _INDEXES.items():
        op.create_index(name, "threads", columns)


def downgrade() -> None:
    for name in _INDEXES:
        op.drop_index(name, table_name="threads")
