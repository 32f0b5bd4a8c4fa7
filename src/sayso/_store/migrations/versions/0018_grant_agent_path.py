"""Grants name the agent path they were given for (`coordinator/analyst`), as wide as `requests.agent_path`.

A grant given on a delegate's request covers that delegate only; its `agent` now holds the
request's whole agent path, which `String(200)` could not hold on PostgreSQL for deep or long
paths (the insert would fail as the approval is recorded).

Revision ID: 0018_grant_agent_path
Revises: 0017_routing
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_grant_agent_path"
down_revision = "0017_routing"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.alter_column("agent", type_=sa.String(400), existing_type=sa.String(200), existing_nullable=True)


def downgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.alter_column("agent", type_=sa.String(200), existing_type=sa.String(400), existing_nullable=True)
