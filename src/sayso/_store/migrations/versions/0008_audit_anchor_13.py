"""The audit chain is anchored: a MAC per record (the audit key's) and a checkpointed head.

`audit.mac` holds each record's signature (NULL for records written without a key, as every
record before this revision). `audit_head` holds the chain's head (one row), moved in the same
commit as each append, so a cut tail or a record appended behind sayso's back shows. The head
starts at the last existing record, unsigned; a runtime with a key vouches for the unsigned
records before it once, with a signed `audit_anchored` record.

Revision ID: 0008_audit_anchor_13
Revises: 0007_grant_agent_13
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_audit_anchor_13"
down_revision = "0007_grant_agent_13"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit") as batch:
        batch.add_column(sa.Column("mac", sa.String(64), nullable=True))
    head = op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("mac", sa.String(64), nullable=True),
    )
    audit = sa.table("audit", sa.column("seq"), sa.column("hash"))
    last = op.get_bind().execute(sa.select(audit.c.seq, audit.c.hash).order_by(audit.c.seq.desc()).limit(1)).first()
    if last is not None:
        op.bulk_insert(head, [{"id": 1, "seq": last.seq, "hash": last.hash, "mac": None}])


def downgrade() -> None:
    op.drop_table("audit_head")
    with op.batch_alter_table("audit") as batch:
        batch.drop_column("mac")
