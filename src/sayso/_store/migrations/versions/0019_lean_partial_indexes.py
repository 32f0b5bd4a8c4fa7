"""Indexes that leave out the rows no query reads through them: no entry for a request without a timer, or a root run.

`ix_requests_expiring` and `ix_requests_escalating` held every open request, those with no deadline
and no escalation step under a NULL key the sweeps never read; `ix_runs_parent_run_id` held every
run, the root runs (nearly all) under a NULL parent. Each approval cycle without timers added an
entry to the first two as its request opened and took it out as it was decided, and one to the
third for its run: three b-trees, five page writes a cycle for nothing. What reads them compares the
key (`expires_at <= :now`, `escalate_at IS NOT NULL`, `parent_run_id IS NOT NULL`), which implies
`IS NOT NULL`, so both databases still read them where they did.

Revision ID: 0019_lean_partial_indexes
Revises: 0018_grant_agent_path
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_lean_partial_indexes"
down_revision = "0018_grant_agent_path"
branch_labels = None
depends_on = None

_INDEXES = {
    "ix_requests_expiring": ("requests", "expires_at", "status = 'open'"),
    "ix_requests_escalating": ("requests", "escalate_at", "status = 'open'"),
    "ix_runs_parent_run_id": ("runs", "parent_run_id", None),
}
"""Each index: its table, its column, and what else its rows had to meet before this revision."""


def upgrade() -> None:
    for name, (table, column, was) in _INDEXES.items():
        op.drop_index(name, table_name=table)
        where = sa.text(f"{was} AND {column} IS NOT NULL" if was else f"{column} IS NOT NULL")
        op.create_index(name, table, [column], sqlite_where=where, postgresql_where=where)


def downgrade() -> None:
    for name, (table, column, was) in _INDEXES.items():
        op.drop_index(name, table_name=table)
        where = sa.text(was) if was else None
        op.create_index(name, table, [column], sqlite_where=where, postgresql_where=where)
