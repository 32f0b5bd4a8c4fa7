"""Grants record the root agent they were given for (and who gave them); existing grants migrate.

A grant given before this revision did not say which agent it was given for, so it let the
principal's calls through every agent. Each existing grant is traced to the decision that created
it through the audit log (an `approve` decision with the grant's tool, subject, scope and time,
and for a `thread` grant its thread): the grant gets that request's root agent and its decider as
`granted_by`. A `thread` grant whose decision cannot be found gets the root agent of its thread
(a request raised there, or the thread's own agent). An `always` grant whose decision cannot be
found cannot be placed: it is revoked, so the next call asks again (fail closed) rather than
keeping a permission wider than anyone gave.

Revision ID: 0007_grant_agent_13
Revises: 0006
Create Date: 2026-12-10
"""

from __future__ import annotations

import json
import time
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007_grant_agent_13"
down_revision = "0006"
branch_labels = None
depends_on = None


def _root(agent_path: str) -> str:
    return agent_path.split("/", 1)[0]


def upgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.add_column(sa.Column("agent", sa.String(200), nullable=True))
        batch.add_column(sa.Column("granted_by", sa.String(200), nullable=True))
    grants = sa.table(
        "grants",
        sa.column("grant_id"),
        sa.column("tool"),
        sa.column("subject_key"),
        sa.column("scope"),
        sa.column("thread_id"),
        sa.column("created_at"),
        sa.column("revoked_at"),
        sa.column("agent"),
        sa.column("granted_by"),
    )
    audit = sa.table("audit", sa.column("seq"), sa.column("body"))
    requests = sa.table("requests", sa.column("thread_id"), sa.column("agent_path"))
    threads = sa.table("threads", sa.column("thread_id"), sa.column("agent"))
    conn = op.get_bind()
    rows = conn.execute(sa.select(grants)).all()
    if not rows:
        return
    decisions: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in conn.execute(sa.select(audit.c.body).order_by(audit.c.seq)).all():
        body = json.loads(record.body)
        if body.get("event") == "decision" and body.get("decision") == "approve" and body.get("scope") != "once":
            key = (body.get("tool_name"), body.get("subject"), body.get("scope"), body.get("decided_at"))
            decisions.setdefault(key, body)
    now = time.time()
    for grant in rows:
        found = decisions.get((grant.tool, grant.subject_key, grant.scope, grant.created_at))
        if found is not None and (grant.scope != "thread" or found.get("thread_id") == grant.thread_id):
            values: dict[str, Any] = {"agent": _root(str(found["agent_path"])), "granted_by": found.get("principal")}
        elif grant.scope == "thread" and grant.thread_id is not None:
            values = {"agent": _thread_root(conn, requests, threads, grant.thread_id)}
        else:
            values = {}
        if values.get("agent") is None:
            values = {"revoked_at": grant.revoked_at if grant.revoked_at is not None else now}
        conn.execute(grants.update().where(grants.c.grant_id == grant.grant_id).values(**values))


def _thread_root(conn: sa.Connection, requests: Any, threads: Any, thread_id: str) -> str | None:
    """The root agent of a thread: that of a request raised there, else the thread's own agent."""
    raised = conn.execute(sa.select(requests.c.agent_path).where(requests.c.thread_id == thread_id).limit(1)).first()
    if raised is not None:
        return _root(str(raised.agent_path))
    thread = conn.execute(sa.select(threads.c.agent).where(threads.c.thread_id == thread_id)).first()
    return None if thread is None else _root(str(thread.agent))


def downgrade() -> None:
    with op.batch_alter_table("grants") as batch:
        batch.drop_column("granted_by")
        batch.drop_column("agent")
