"""Marks: one generic table for the small values interface adapters keep, replacing `a2a_pauses`.

The A2A adapter's activation marks move over under the namespace `a2a.activation`, keyed by
run id, as JSON `{"pause_id": ..., "activated": ...}`.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

A2A_ACTIVATION = "a2a.activation"


def upgrade() -> None:
    marks = op.create_table(
        "marks",
        sa.Column("namespace", sa.String(100), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    a2a_pauses = sa.table("a2a_pauses", sa.column("run_id"), sa.column("pause_id"), sa.column("activated"))
    conn = op.get_bind()
    now = time.time()
    rows = [
        {
            "namespace": A2A_ACTIVATION,
            "key": row.run_id,
            "value": json.dumps({"pause_id": row.pause_id, "activated": bool(row.activated)}),
            "updated_at": now,
        }
        for row in conn.execute(sa.select(a2a_pauses)).all()
    ]
    if rows:
        op.bulk_insert(marks, rows)
    op.drop_table("a2a_pauses")


def downgrade() -> None:
    a2a_pauses = op.create_table(
        "a2a_pauses",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("pause_id", sa.String(64), nullable=False),
        sa.Column("activated", sa.Boolean, nullable=False),
    )
    marks = sa.table("marks", sa.column("namespace"), sa.column("key"), sa.column("value"))
    conn = op.get_bind()
    rows = []
    for row in conn.execute(sa.select(marks).where(marks.c.namespace == A2A_ACTIVATION)).all():
        value = json.loads(row.value)
        rows.append({"run_id": row.key, "pause_id": value["pause_id"], "activated": bool(value["activated"])})
    if rows:
        op.bulk_insert(a2a_pauses, rows)
    op.drop_table("marks")
