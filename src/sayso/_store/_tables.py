"""The database schema, shared by SQLite and PostgreSQL and versioned by the Alembic migrations beside it."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Index, Integer, LargeBinary, MetaData, String, Table, Text, false, text

metadata = MetaData()

threads = Table(
    "threads",
    metadata,
    Column("thread_id", String(64), primary_key=True),
    Column("owner", String(200), nullable=False),
    Column("agent", String(200), nullable=False),
    Column("active_run_id", String(64), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("parent_run_id", String(64), nullable=True),
    Index("ix_threads_owner_created", "owner", "created_at", "thread_id"),
    Index("ix_threads_created", "created_at", "thread_id"),
)

runs = Table(
    "runs",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("thread_id", String(64), nullable=False),
    Column("agent", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("prompt", Text, nullable=True),
    Column("client_tools", LargeBinary, nullable=True),
    Column("principal", String(200), nullable=True),
    Column("resume_pause_id", String(64), nullable=True),
    Column("pause_id", String(64), nullable=True),
    Column("output", Text, nullable=True),
    Column("error", Text, nullable=True),
    Column("lease_holder", String(200), nullable=True),
    Column("lease_expires_at", Float, nullable=True),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("revision", Integer, nullable=False, default=0),
    Column("parent_run_id", String(64), nullable=True),
    Column("parent_call_id", String(200), nullable=True),
    Column("agent_path", String(400), nullable=True),
    Index("ix_runs_thread_created", "thread_id", "created_at"),
    Index(
        "ix_runs_parent_run_id",
        "parent_run_id",
        sqlite_where=text("parent_run_id IS NOT NULL"),
        postgresql_where=text("parent_run_id IS NOT NULL"),
    ),
    Index(
        "ix_runs_held",
        "lease_expires_at",
        sqlite_where=text("lease_holder IS NOT NULL"),
        postgresql_where=text("lease_holder IS NOT NULL"),
    ),
    Index(
        "ix_runs_top",
        "agent",
        "updated_at",
        "run_id",
        sqlite_where=text("parent_run_id IS NULL"),
        postgresql_where=text("parent_run_id IS NULL"),
    ),
)
"""`ix_runs_held`: the runs a process holds (a lease holder is set only while one works on the run, or holds its
pause), by when the lease lapses: what the recovery sweep reads to find runs whose process died. `ix_runs_top`: the
top-level runs (A2A's tasks) by agent and last update, read a page at a time by `top_runs`."""

pauses = Table(
    "pauses",
    metadata,
    Column("pause_id", String(64), primary_key=True),
    Column("run_id", String(64), nullable=False, index=True),
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Index(
        "ix_pauses_open",
        "created_at",
        sqlite_where=text("status = 'open'"),
        postgresql_where=text("status = 'open'"),
    ),
)
"""`ix_pauses_open`: the open pauses by age, what the recovery sweep reads to find paused runs waiting on nobody."""

requests = Table(
    "requests",
    metadata,
    Column("request_id", String(64), primary_key=True),
    Column("pause_id", String(64), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("thread_id", String(64), nullable=False),
    Column("agent_path", String(400), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("body", LargeBinary, nullable=False),
    Column("routed", Boolean, nullable=False, server_default=false()),
    Column("escalate_at", Float, nullable=True),
    Column("escalations", Integer, nullable=False, default=0, server_default="0"),
    Index("ix_requests_open", "status", "created_at"),
    Index("ix_requests_run", "run_id"),
    Index("ix_requests_thread", "thread_id", "status"),
    Index(
        "ix_requests_expiring",
        "expires_at",
        sqlite_where=text("status = 'open' AND expires_at IS NOT NULL"),
        postgresql_where=text("status = 'open' AND expires_at IS NOT NULL"),
    ),
    Index(
        "ix_requests_escalating",
        "escalate_at",
        sqlite_where=text("status = 'open' AND escalate_at IS NOT NULL"),
        postgresql_where=text("status = 'open' AND escalate_at IS NOT NULL"),
    ),
)
"""Each request of a pause; `ix_requests_expiring` (open requests that expire, by expiry time) is what the expiry
sweep reads, `ix_requests_escalating` (open requests with an escalation step to come, by when it is due) what the
escalation sweep reads; a request without a timer is in neither. `escalations` counts the steps that fired."""

request_deciders = Table(
    "request_deciders",
    metadata,
    Column("request_id", String(64), primary_key=True),
    Column("principal", String(200), primary_key=True),
    Index("ix_request_deciders_principal", "principal"),
)
"""Who may decide a routed request (`requests.routed`): what the inbox lists for each of them."""

votes = Table(
    "votes",
    metadata,
    Column("request_id", String(64), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("principal", String(200), nullable=False),
    Column("voted_at", Float, nullable=False),
    Column("body", LargeBinary, nullable=False),
)
"""Votes on a request that needs several approvals, by position: a vote counted twice collides on its key."""

decisions = Table(
    "decisions",
    metadata,
    Column("request_id", String(64), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("by", String(16), nullable=False),
    Column("principal", String(200), nullable=True),
    Column("decided_at", Float, nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("via", String(16), nullable=True),
    Column("closed", Boolean, nullable=False, server_default=false()),
)

executions = Table(
    "executions",
    metadata,
    Column("request_id", String(64), primary_key=True),
    Column("run_id", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("result", LargeBinary, nullable=True),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
)

messages = Table(
    "messages",
    metadata,
    Column("thread_id", String(64), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("run_id", String(64), nullable=False),
    Column("count", Integer, nullable=False),
    Column("body", LargeBinary, nullable=False),
)

grants = Table(
    "grants",
    metadata,
    Column("grant_id", String(64), primary_key=True),
    Column("tool", String(200), nullable=False),
    Column("subject_key", String(400), nullable=False),
    Column("subject_label", Text, nullable=False),
    Column("scope", String(16), nullable=False),
    Column("principal", String(200), nullable=False),
    Column("thread_id", String(64), nullable=True),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float, nullable=True),
    Column("revoked_at", Float, nullable=True),
    Column("agent", String(400), nullable=True),
    Column("granted_by", String(200), nullable=True),
    Index("ix_grants_lookup", "principal", "tool", "subject_key"),
)
"""Remembered approvals; `agent` is the agent path a grant was given for (NULL: migrated untraced, covers nothing)."""

audit = Table(
    "audit",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("body", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Column("mac", String(64), nullable=True),
)
"""The hash-chained audit log; `mac` is the audit key's signature of a record (NULL when written without a key)."""

audit_head = Table(
    "audit_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("seq", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
    Column("mac", String(64), nullable=True),
)
"""The audit chain's head (one row, `id` 1), moved in the same commit as every append: a cut tail shows."""

marks = Table(
    "marks",
    metadata,
    Column("namespace", String(100), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("revision", Integer, nullable=False, server_default="1"),
)
"""Documents by namespace and key, each a JSON text with a revision: where a workflow run stands, the remote task
behind a proxy run, and the small values interface adapters keep (say, whether an A2A call activated kagent's
extension), each under its own namespace."""

outbox = Table(
    "outbox",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("event_id", String(64), nullable=False, unique=True),
    Column("kind", String(32), nullable=False),
    Column("request_id", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("fanned_out", Boolean, nullable=False, default=False),
    Column("step", Integer, nullable=True),
    Index("ix_outbox_waiting", "fanned_out", "seq"),
    Index("ix_outbox_age", "fanned_out", "created_at"),
    Index("ix_outbox_request", "request_id", "seq"),
)
"""Events (a request opened, decided or escalated: `step` says which escalation step), each written in the same
commit as the change it reports;
`ix_outbox_age` finds the old ones to prune, `ix_outbox_request` a request's earlier events (sent first)."""

deliveries = Table(
    "deliveries",
    metadata,
    Column("delivery_id", String(100), primary_key=True),
    Column("event_id", String(64), nullable=False),
    Column("hook", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", Float, nullable=False),
    Column("claimed_by", String(200), nullable=True),
    Column("claimed_until", Float, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("finished_at", Float, nullable=True),
    Index("ix_deliveries_due", "status", "next_attempt_at"),
    Index("ix_deliveries_settled", "status", "finished_at"),
    Index("ix_deliveries_event", "event_id"),
)
"""One event bound for one webhook: pending until delivered, skipped or given up on; claimed by one sender at a time.
`ix_deliveries_settled` finds the old settled ones to prune, `ix_deliveries_event` an event's deliveries."""

steps = Table(
    "steps",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("scope", String(200), primary_key=True),
    Column("name", String(200), primary_key=True),
    Column("occurrence", Integer, primary_key=True, autoincrement=False),
    Column("status", String(16), nullable=False),
    Column("result", LargeBinary, nullable=True),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=True),
)
"""The step journal: each step a tool or workflow node took (`sayso.step`), keyed by run, scope (a tool call's
id, a node's pass) and name's occurrence; `started` until its function returned, then `done` with its JSON."""
