"""The sweeps' partial indexes hold only the requests that have a timer: no entry for a request without one.

`ix_requests_expiring` and `ix_requests_escalating` held every open request, those with no deadline
and no escalation step under a NULL key the sweeps never read. Each approval without a timer (most
of them) added an entry to both as it opened and took it out as it was decided: two b-trees, four
page writes a cycle for nothing. Their sweeps' queries compare the key (`expires_at <= :now`,
`escalate_at IS NOT NULL`), which implies `IS NOT NULL`, so both databases still read them.

Revision ID: 0019_lean_timer_indexes
Revises: 0018_grant_agent_path
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_lean_timer_indexes"
down_revision = "0018_grant_agent_path"
branch_labels = None
depends_on = None

_OPEN = "status = 'open'"
_INDEXES = {"ix_requests_expiring": "expires_at", "ix_requests_escalating": "escalate_at"}


def _recreate(where: dict[str, str]) -> None:
    for name, column in _INDEXES.items():
        op.drop_index(name, table_name="requests")
        clause = sa.text(where[column])
        op.create_index(name, "requests", [column], sqlite_where=clause, postgresql_where=clause)


def upgrade() -> None:
    _recreate({column: f"{_OPEN} AND {column} IS NOT NULL" for column in _INDEXES.values()})


def downgrade() -> None:
    _recreate({column: _OPEN for column in _INDEXES.values()})
