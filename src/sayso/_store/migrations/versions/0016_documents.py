"""One table of documents: workflow states and remote tasks move into `marks`, which gains a revision.

A workflow run's state (`workflow_states.body`, JSON) goes under the namespace `sayso.workflow_state`
and a proxy run's remote task (`remote_tasks`, three columns) under `sayso.remote_task` as JSON
`{"url": ..., "task_id": ..., "context_id": ...}`, both keyed by run id; the two tables go. Every
document starts at revision 1, so a writer may put one only if it is still what it read.

Revision ID: 0016_documents
Revises: 0015_escalation
Create Date: 2026-12-01
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa
from alembic import op

revision = "0016_documents"
down_revision = "0015_escalation"
branch_labels = None
depends_on = None

WORKFLOW_STATES = "sayso.workflow_state"
REMOTE_TASKS = "sayso.remote_task"

_marks = sa.table(
    "marks",
    sa.column("namespace"),
    sa.column("key"),
    sa.column("value"),
    sa.column("updated_at"),
    sa.column("revision"),
)
_workflow_states = sa.table("workflow_states", sa.column("run_id"), sa.column("body"), sa.column("updated_at"))
_remote_tasks = sa.table(
    "remote_tasks", sa.column("run_id"), sa.column("url"), sa.column("task_id"), sa.column("context_id")
)


def upgrade() -> None:
    with op.batch_alter_table("marks") as marks:
        marks.add_column(sa.Column("revision", sa.Integer, nullable=False, server_default="1"))
    conn = op.get_bind()
    now = time.time()
    rows = [
        {
            "namespace": WORKFLOW_STATES,
            "key": row.run_id,
            "value": bytes(row.body).decode(),
            "updated_at": row.updated_at,
            "revision": 1,
        }
        for row in conn.execute(sa.select(_workflow_states)).all()
    ]
    rows += [
        {
            "namespace": REMOTE_TASKS,
            "key": row.run_id,
            "value": json.dumps({"url": row.url, "task_id": row.task_id, "context_id": row.context_id}),
            "updated_at": now,
            "revision": 1,
        }
        for row in conn.execute(sa.select(_remote_tasks)).all()
    ]
    if rows:
        op.bulk_insert(_marks, rows)
    op.drop_table("workflow_states")
    op.drop_table("remote_tasks")


def downgrade() -> None:
    workflow_states = op.create_table(
        "workflow_states",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("body", sa.LargeBinary, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    remote_tasks = op.create_table(
        "remote_tasks",
        sa.Column("run_id", sa.String(64), primary_key=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("context_id", sa.String(200), nullable=False),
    )
    conn = op.get_bind()
    moved = conn.execute(sa.select(_marks).where(_marks.c.namespace.in_([WORKFLOW_STATES, REMOTE_TASKS]))).all()
    states = [
        {"run_id": r.key, "body": r.value.encode(), "updated_at": r.updated_at}
        for r in moved
        if r.namespace == WORKFLOW_STATES
    ]
    tasks = [{"run_id": r.key, **json.loads(r.value)} for r in moved if r.namespace == REMOTE_TASKS]
    if states:
        op.bulk_insert(workflow_states, states)
    if tasks:
        op.bulk_insert(remote_tasks, tasks)
    op.execute(_marks.delete().where(_marks.c.namespace.in_([WORKFLOW_STATES, REMOTE_TASKS])))
    with op.batch_alter_table("marks") as marks:
        marks.drop_column("revision")
