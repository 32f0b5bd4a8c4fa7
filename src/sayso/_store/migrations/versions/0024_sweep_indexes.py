"""The recovery sweep's two questions answered from the few rows they ask about, not from every run.

Every few seconds a server asks which runs' leases lapsed and which paused runs wait on nobody.
Both read the whole `runs` table (every run ever), on the event loop: ~150 ms each sweep with
300,000 runs in a SQLite file, growing with the store. `ix_runs_held` holds only the runs that have
a lease holder (running, or paused while held), by when the lease lapses; `ix_pauses_open` only the
open pauses, by age. A run adds an entry to each while it is held or paused and takes it out as it
moves on: a few index writes a cycle for sweeps that no longer grow with the store.

Revision ID: 0024_sweep_indexes
Revises: 0023_runs_by_thread_and_time
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024_sweep_indexes"
down_revision = "0023_runs_by_thread_and_time"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_runs_held": ("runs", "lease_expires_at", "lease_holder IS NOT NULL"),
    "ix_pauses_open": ("pauses", "created_at", "status = 'open'"),
}
"""Each index: its table, its column, and which rows it holds."""


def upgrade() -> None:
    for name, (table, column, where) in _INDEXES.items():
        op.create_index(name, table, [column], sqlite_where=sa.text(where), postgresql_where=sa.text(where))


def downgrade() -> None:
    for name, (table, _, _) in _INDEXES.items():
        op.drop_index(name, table_name=table)
