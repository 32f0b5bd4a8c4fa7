"""Decisions say whether they closed a request unanswered (`closed`): a skip recorded as the run went on without it.

A forced resume, a new message in the thread and a cancel each skip what was still open, by the
person who did it, so statistics counted those skips as that person's decisions, in time to decide
and per approver. The column tells them apart. Rows written before it are marked by their exact
stored body: sayso wrote those skips with one of three fixed reasons.

Revision ID: 0020_decision_closed
Revises: 0019_lean_partial_indexes
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_decision_closed"
down_revision = "0019_lean_partial_indexes"
branch_labels = None
depends_on = None

_CLOSING_BODIES = [
    b'{"kind":"skip","reason":"the person sent a message instead of answering"}',
    b'{"kind":"skip","reason":"the run was resumed before this request was answered"}',
    b'{"kind":"skip","reason":"the run was cancelled before this request was answered"}',
]
"""The stored decision of every skip sayso recorded when it closed a request unanswered (`_core/resume.py`)."""


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("closed", sa.Boolean, nullable=False, server_default=sa.false()))
    decisions = sa.table("decisions", sa.column("kind"), sa.column("by"), sa.column("body"), sa.column("closed"))
    op.execute(
        decisions.update()
        .where(
            decisions.c.kind == "skip",
            decisions.c.by.in_(["person", "system"]),
            decisions.c.body.in_([sa.literal(b, sa.LargeBinary) for b in _CLOSING_BODIES]),
        )
        .values(closed=sa.true())
    )


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("closed")
