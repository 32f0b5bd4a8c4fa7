"""The constant statements of the hot path, the steps several SQL verbs share, and rows ↔ records.

Each step runs inside the caller's transaction (`Tx`); none opens one of its own, so a verb that
uses several of them still commits once. Statements are written once with named parameters and
run unchanged on SQLite and PostgreSQL, except where a `pg=` variant says otherwise.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DECISION_ADAPTER, DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, Request
from ...exceptions import RunConflict
from .._records import GRANTS_READ_AT_ONCE, ExecutionResult, OutboxKind, RunRecord, ThreadRecord
from ._chain import append_audit
from ._tx import Row, Sql, Tx

RUN_COLUMNS = (
    "run_id",
    "thread_id",
    "agent",
    "status",
    "prompt",
    "client_tools",
    "principal",
    "resume_pause_id",
    "pause_id",
    "output",
    "error",
    "lease_owner",
    "lease_expires_at",
    "created_at",
    "updated_at",
    "revision",
    "parent_run_id",
    "parent_call_id",
    "agent_path",
)
_RUN = ", ".join(RUN_COLUMNS)
GRANT_COLUMNS = (
    "grant_id",
    "tool",
    "subject_key",
    "subject_label",
    "scope",
    "principal",
    "thread_id",
    "created_at",
    "expires_at",
    "revoked_at",
    "agent",
    "granted_by",
)
_GRANT = ", ".join(GRANT_COLUMNS)
_BUMP = "updated_at = :now, revision = revision + 1"
"""Every change to a run's row bumps `revision` and `updated_at`."""

# threads

GET_THREAD = Sql("SELECT thread_id, owner, agent, active_run_id, created_at FROM threads WHERE thread_id = :thread_id")
THREAD_EXISTS = Sql("SELECT 1 FROM threads WHERE thread_id = :thread_id")
INSERT_THREAD = Sql(
    "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at) "
    "VALUES (:thread_id, :owner, :agent, :run_id, :now)"
)
CLAIM_FREE_THREAD = Sql(
    "UPDATE threads SET active_run_id = :run_id WHERE thread_id = :thread_id AND active_run_id IS NULL"
)
CLAIM_THREAD_FROM = Sql(
    "UPDATE threads SET active_run_id = :run_id WHERE thread_id = :thread_id AND active_run_id = :expect"
)
FREE_THREAD = Sql("UPDATE threads SET active_run_id = NULL WHERE thread_id = :thread_id AND active_run_id = :run_id")

# runs

INSERT_RUN = Sql(f"INSERT INTO runs ({_RUN}) VALUES ({', '.join(':' + c for c in RUN_COLUMNS)})")
GET_RUN = Sql(f"SELECT {_RUN} FROM runs WHERE run_id = :run_id")
PAUSE_RUN = Sql(
    "UPDATE runs SET status = 'paused', pause_id = :pause_id, lease_owner = NULL, lease_expires_at = NULL, "
    f"{_BUMP} WHERE run_id = :run_id AND lease_owner = :owner"
)
"""Pause a run this process still holds: the lease check and the change are one conditional update."""
FINISH_RUN = Sql(
    "UPDATE runs SET status = :status, output = :output, error = :error, pause_id = NULL, lease_owner = NULL, "
    f"lease_expires_at = NULL, {_BUMP} WHERE run_id = :run_id AND lease_owner = :owner"
)
CANCEL_RUN = Sql(f"UPDATE runs SET status = 'cancelled', pause_id = NULL, {_BUMP} WHERE run_id = :run_id")
CANCEL_PAUSED_RUN = Sql(
    f"UPDATE runs SET status = 'cancelled', pause_id = NULL, {_BUMP} WHERE run_id = :run_id AND status = 'paused'"
)
CLAIM_RUN = Sql(
    "UPDATE runs SET status = 'running', resume_pause_id = :pause_id, pause_id = NULL, lease_owner = :owner, "
    f"lease_expires_at = :until, {_BUMP} WHERE run_id = :run_id"
)
RENEW_LEASE = Sql(
    "UPDATE runs SET lease_expires_at = :until WHERE run_id = :run_id AND lease_owner = :owner AND status = 'running'"
)
TAKE_OVER = Sql(
    f"UPDATE runs SET lease_owner = :owner, lease_expires_at = :until, {_BUMP} "
    "WHERE run_id = :run_id AND status = 'running' AND (lease_expires_at < :now OR lease_owner = :dead)"
)

# the message log

APPEND_MESSAGES = Sql(
    "INSERT INTO messages (thread_id, seq, run_id, count, body) "
    "SELECT :thread_id, COALESCE(MAX(seq), 0) + 1, :run_id, :count, :body FROM messages WHERE thread_id = :thread_id",
    pg="INSERT INTO messages (thread_id, seq, run_id, count, body) "
    "SELECT CAST(:thread_id AS VARCHAR), COALESCE(MAX(seq), 0) + 1, CAST(:run_id AS VARCHAR), CAST(:count AS INTEGER), "
    "CAST(:body AS BYTEA) FROM messages WHERE thread_id = :thread_id",
)
"""One batch at the end of the thread's log, its position read in the same statement."""
HISTORY = Sql("SELECT body FROM messages WHERE thread_id = :thread_id ORDER BY seq")
RUN_MESSAGES = Sql(
    "SELECT body FROM messages WHERE thread_id = (SELECT thread_id FROM runs WHERE run_id = :run_id) "
    "AND run_id = :run_id ORDER BY seq"
)

# pauses, requests, decisions

INSERT_PAUSE = Sql(
    "INSERT INTO pauses (pause_id, run_id, status, created_at) VALUES (:pause_id, :run_id, 'open', :now)"
)
CONSUME_PAUSE = Sql("UPDATE pauses SET status = 'consumed' WHERE pause_id = :pause_id AND status = 'open'")
INSERT_REQUEST = Sql(
    "INSERT INTO requests (request_id, pause_id, position, run_id, thread_id, agent_path, kind, status, created_at, "
    "expires_at, body) VALUES (:request_id, :pause_id, :position, :run_id, :thread_id, :agent_path, :kind, 'open', "
    ":created_at, :expires_at, :body)"
)
_DECISION = (
    'd.body AS decision_body, d."by" AS decision_by, d.principal AS decision_principal, d.decided_at, '
    "d.via AS decision_via"
)
GET_PAUSE = Sql("SELECT run_id, status FROM pauses WHERE pause_id = :pause_id")
PAUSE_REQUESTS = Sql(
    f"SELECT r.request_id, r.body, {_DECISION} FROM requests r "
    "LEFT JOIN decisions d ON d.request_id = r.request_id WHERE r.pause_id = :pause_id ORDER BY r.position"
)
RUN_REQUESTS = Sql(
    f"SELECT r.request_id, r.body, {_DECISION} FROM requests r "
    "LEFT JOIN decisions d ON d.request_id = r.request_id WHERE r.run_id = :run_id ORDER BY r.created_at, r.position"
)
GET_REQUEST = Sql(
    f"SELECT r.request_id, r.body, p.status AS pause_status, {_DECISION} FROM requests r "
    "JOIN pauses p ON p.pause_id = r.pause_id LEFT JOIN decisions d ON d.request_id = r.request_id "
    "WHERE r.request_id = :request_id"
)
REQUEST_WITH_RUN = Sql(
    f"SELECT r.request_id, r.pause_id AS request_pause_id, r.body, p.status AS pause_status, {_DECISION}, "
    + ", ".join(f"u.{c}" for c in RUN_COLUMNS)
    + " FROM requests r JOIN pauses p ON p.pause_id = r.pause_id JOIN runs u ON u.run_id = r.run_id "
    "LEFT JOIN decisions d ON d.request_id = r.request_id WHERE r.request_id = :request_id"
)
PAUSE_OF_REQUEST = Sql(
    f"SELECT r.request_id, r.pause_id AS request_pause_id, r.body, p.status AS pause_status, {_DECISION}, "
    + ", ".join(f"u.{c}" for c in RUN_COLUMNS)
    + " FROM requests r JOIN pauses p ON p.pause_id = r.pause_id JOIN runs u ON u.run_id = r.run_id "
    "LEFT JOIN decisions d ON d.request_id = r.request_id "
    "WHERE r.pause_id = (SELECT pause_id FROM requests WHERE request_id = :request_id) ORDER BY r.position"
)
"""Every request of the pause a request belongs to, with the pause's run and the decisions: one read for deciding."""
OPEN_REQUESTS = Sql(
    "SELECT r.body FROM requests r JOIN pauses p ON p.pause_id = r.pause_id WHERE r.status = 'open' "
    "AND p.status = 'open' AND r.kind <> 'delegate' ORDER BY r.created_at, r.position LIMIT :limit"
)
GET_DECISION = Sql(f"SELECT d.request_id, {_DECISION} FROM decisions d WHERE d.request_id = :request_id")
INSERT_DECISION = Sql(
    'INSERT INTO decisions (request_id, kind, "by", principal, decided_at, via, body) '
    "VALUES (:request_id, :kind, :by, :principal, :decided_at, :via, :body)"
)
MARK_DECIDED = Sql("UPDATE requests SET status = 'decided' WHERE request_id = :request_id")
_EXPIRED_RUNS = (
    "SELECT DISTINCT p.run_id FROM requests r JOIN pauses p ON p.pause_id = r.pause_id "
    "WHERE {open_r} AND r.expires_at <= :now AND p.status = 'open' "
    "AND NOT EXISTS (SELECT 1 FROM requests w WHERE w.pause_id = r.pause_id AND {open_w} "
    "AND (w.expires_at IS NULL OR w.expires_at > :now))"
)
EXPIRED_RUNS = Sql(
    # SQLite, without statistics, takes `status = 'open'` for a selective key of `ix_requests_open` and would
    # read every open request; `likelihood` tells it the term is not, so it ranges over the partial index
    # `ix_requests_expiring` and looks each pause's other requests up by `pause_id`. PostgreSQL has statistics.
    _EXPIRED_RUNS.format(open_r="likelihood(r.status = 'open', 0.9)", open_w="likelihood(w.status = 'open', 0.9)"),
    pg=_EXPIRED_RUNS.format(open_r="r.status = 'open'", open_w="w.status = 'open'"),
)
"""Paused runs whose open requests all expired, found from the open requests that expired (the partial index
`requests (expires_at) WHERE status = 'open'`): the sweep reads what expired, not every open request."""

# the ledger

GET_EXECUTION = Sql("SELECT status, result FROM executions WHERE request_id = :request_id")
INSERT_EXECUTION = Sql(
    "INSERT INTO executions (request_id, run_id, status, started_at) VALUES (:request_id, :run_id, 'executing', :now)"
)
FINISH_EXECUTION = Sql(
    "UPDATE executions SET status = :status, result = :result, finished_at = :now WHERE request_id = :request_id"
)
RESOLVE_EXECUTION = Sql(
    "UPDATE executions SET status = :status, result = :result, finished_at = :now "
    "WHERE request_id = :request_id AND status = 'executing'"
)
"""Finish one entry still `executing`: of several sweeps resolving it, one changes it."""

# grants

INSERT_GRANT = Sql(f"INSERT INTO grants ({_GRANT}) VALUES ({', '.join(':' + c for c in GRANT_COLUMNS)})")
GRANTS_FOR = Sql(
    f"SELECT {_GRANT} FROM grants WHERE principal = :principal AND tool = :tool AND subject_key = :subject_key "
    "AND revoked_at IS NULL"
)
ACTIVE_GRANTS = Sql(
    f"SELECT {_GRANT} FROM grants WHERE principal = :principal AND revoked_at IS NULL "
    "AND (expires_at IS NULL OR expires_at > :now) LIMIT :limit"
)
# the outbox

INSERT_OUTBOX = Sql(
    "INSERT INTO outbox (event_id, kind, request_id, created_at, fanned_out) "
    "VALUES (:event_id, :kind, :request_id, :created_at, :fanned_out)"
)

# remote tasks

GET_REMOTE_TASK = Sql("SELECT url, task_id, context_id FROM remote_tasks WHERE run_id = :run_id")
DELETE_REMOTE_TASK = Sql("DELETE FROM remote_tasks WHERE run_id = :run_id")
INSERT_REMOTE_TASK = Sql(
    "INSERT INTO remote_tasks (run_id, url, task_id, context_id) VALUES (:run_id, :url, :task_id, :context_id)"
)


# rows ↔ records


def run_record(row: Row, prefix: str = "") -> RunRecord:
    """A run from its row (client tools parsed)."""
    fields = {c: row[prefix + c] for c in RUN_COLUMNS}
    raw_tools = fields.pop("client_tools")
    return RunRecord(**fields, client_tools=CLIENT_TOOLS_ADAPTER.validate_json(raw_tools) if raw_tools else ())


def run_params(run: RunRecord) -> dict[str, Any]:
    """A run as the parameters of its row (client tools as JSON)."""
    row = {c: getattr(run, c) for c in RUN_COLUMNS}  # not `asdict`: it deep-copies every field
    row["client_tools"] = CLIENT_TOOLS_ADAPTER.dump_json(run.client_tools) if run.client_tools else None
    return row


def thread_record(row: Row) -> ThreadRecord:
    """A thread from its row."""
    return ThreadRecord(
        thread_id=row["thread_id"],
        owner=row["owner"],
        agent=row["agent"],
        active_run_id=row["active_run_id"],
        created_at=row["created_at"],
    )


def grant_record(row: Row) -> Grant:
    """A grant from its row."""
    return Grant(**{c: row[c] for c in GRANT_COLUMNS})


def decision_of(row: Row) -> DecisionRecord | None:
    """The decision joined to a request's row (`_DECISION` columns), if one was taken."""
    if row["decision_body"] is None:
        return None
    return DecisionRecord(
        request_id=row["request_id"],
        decision=DECISION_ADAPTER.validate_json(row["decision_body"]),
        by=row["decision_by"],
        principal=row["decision_principal"],
        decided_at=row["decided_at"],
        via=row["decision_via"],
    )


def requests_and_decisions(rows: Sequence[Row]) -> tuple[list[Request], dict[str, DecisionRecord]]:
    """Requests and the decisions taken for them, from rows of `PAUSE_REQUESTS` or `RUN_REQUESTS`."""
    requests = [REQUEST_ADAPTER.validate_json(row["body"]) for row in rows]
    decisions = {d.request_id: d for d in map(decision_of, rows) if d is not None}
    return requests, decisions


def decode_history(bodies: Sequence[bytes]) -> list[ModelMessage]:
    """A thread's stored batches as one list of messages, decoded in one pass over their JSON arrays."""
    if not bodies:
        return []
    if len(bodies) == 1:
        return ModelMessagesTypeAdapter.validate_json(bodies[0])
    # Each batch is a JSON array: joining their insides gives one array of the whole history.
    inner = [bytes(b).strip()[1:-1].strip() for b in bodies]
    return ModelMessagesTypeAdapter.validate_json(b"[" + b",".join(i for i in inner if i) + b"]")


# steps


async def history_bodies(tx: Tx, thread_id: str) -> list[bytes]:
    """A thread's stored message batches, oldest first, undecoded (decode them after the transaction)."""
    return [bytes(row["body"]) for row in await tx.all(HISTORY, {"thread_id": thread_id})]


async def active_grants(tx: Tx, principal: str | None, now: float) -> list[Grant] | None:
    """`principal`'s active grants, or `None` when none were asked for or there are too many to read at once."""
    if principal is None:
        return None
    params = {"principal": principal, "now": now, "limit": GRANTS_READ_AT_ONCE + 1}
    rows = await tx.all(ACTIVE_GRANTS, params)
    return None if len(rows) > GRANTS_READ_AT_ONCE else [grant_record(row) for row in rows]


async def update_own_run(tx: Tx, sql: Sql, run_id: str, owner: str, **values: Any) -> None:
    """Change a run this process holds; the lease check is the update's own condition.

    Raises:
        RunConflict: another process holds the run now.
    """
    if await tx.run(sql, {"run_id": run_id, "owner": owner, **values}) != 1:
        raise RunConflict(run_id, "this process lost its lease on the run; another process carries it on")


async def free_thread(tx: Tx, run: RunRecord) -> None:
    """The thread takes new runs again once this one has ended."""
    await tx.later(FREE_THREAD, [{"thread_id": run.thread_id, "run_id": run.run_id}])


async def consume(tx: Tx, pause_id: str) -> bool:
    """Consume an open pause; `False` when it was consumed before (someone else won)."""
    return await tx.run(CONSUME_PAUSE, {"pause_id": pause_id}) == 1


async def append_messages(tx: Tx, run: RunRecord, new: Sequence[ModelMessage]) -> None:
    """Append a run's new messages to its thread's log as one batch."""
    if not new:
        return
    await tx.later(
        APPEND_MESSAGES,
        [
            {
                "thread_id": run.thread_id,
                "run_id": run.run_id,
                "count": len(new),
                "body": ModelMessagesTypeAdapter.dump_json(list(new)),
            }
        ],
    )


async def insert_requests(tx: Tx, pause_id: str, requests: Sequence[Request]) -> None:
    """Store a pause's requests, open, in the order they were raised."""
    if not requests:
        return
    await tx.later(
        INSERT_REQUEST,
        [
            {
                "request_id": r.request_id,
                "pause_id": pause_id,
                "position": position,
                "run_id": r.run_id,
                "thread_id": r.thread_id,
                "agent_path": r.agent_path,
                "kind": r.kind,
                "created_at": r.created_at,
                "expires_at": r.expires_at,
                "body": REQUEST_ADAPTER.dump_json(r),
            }
            for position, r in enumerate(requests)
        ],
    )


async def decisions_of(tx: Tx, request_ids: Sequence[str]) -> dict[str, DecisionRecord]:
    """The decisions taken for these requests, by request id."""
    found: dict[str, DecisionRecord] = {}
    for request_id in dict.fromkeys(request_ids):
        row = await tx.one(GET_DECISION, {"request_id": request_id})
        if row is not None and (record := decision_of(row)) is not None:
            found[request_id] = record
    return found


async def insert_decisions(tx: Tx, records: Sequence[DecisionRecord], audit: Sequence[AuditEvent] = ()) -> None:
    """Record decisions (their requests become `decided`) and append their audit records."""
    await append_audit(tx, audit)
    if not records:
        return
    await tx.later(
        INSERT_DECISION,
        [
            {
                "request_id": d.request_id,
                "kind": d.decision.kind,
                "by": d.by,
                "principal": d.principal,
                "decided_at": d.decided_at,
                "via": d.via,
                "body": DECISION_ADAPTER.dump_json(d.decision),
            }
            for d in records
        ],
    )
    await tx.later(MARK_DECIDED, [{"request_id": d.request_id} for d in records])
    await outbox(tx, "request.decided", [d.request_id for d in records], now=max(d.decided_at for d in records))


async def outbox(tx: Tx, kind: OutboxKind, request_ids: Sequence[str], *, now: float) -> None:
    """Write one outbox event per request, in the caller's transaction (so it commits with the change)."""
    if request_ids:
        await tx.later(
            INSERT_OUTBOX,
            [
                {"event_id": new_event_id(), "kind": kind, "request_id": r, "created_at": now, "fanned_out": False}
                for r in request_ids
            ],
        )


def new_event_id() -> str:
    """An outbox event's id: random, so ids never repeat across databases."""
    return f"evt_{secrets.token_urlsafe(12)}"


async def insert_grants(tx: Tx, grants: Sequence[Grant]) -> None:
    """Store new grants."""
    if grants:
        await tx.later(INSERT_GRANT, [asdict(g) for g in grants])


async def finish_executions(tx: Tx, executions: Sequence[ExecutionResult], now: float) -> None:
    """Write the results of approved calls to their ledger entries, with their audit records."""
    if not executions:
        return
    await append_audit(tx, [done.audit for done in executions])  # first: its head lock is the one round trip
    await tx.later(
        FINISH_EXECUTION,
        [
            {"request_id": done.request_id, "status": done.status, "result": done.result, "now": now}
            for done in executions
        ],
    )


# workflow runs' state

GET_WORKFLOW_STATE = Sql("SELECT body FROM workflow_states WHERE run_id = :run_id")
PUT_WORKFLOW_STATE = Sql(
    "INSERT INTO workflow_states (run_id, body, updated_at) VALUES (:run_id, :body, :now) "
    "ON CONFLICT (run_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at"
)
"""Replace a workflow run's saved state in one statement (an upsert on the run's id)."""


async def workflow_state(tx: Tx, run_id: str) -> bytes | None:
    """A workflow run's saved state, or `None`."""
    row = await tx.one(GET_WORKFLOW_STATE, {"run_id": run_id})
    return None if row is None else bytes(row["body"])


async def put_workflow_state(tx: Tx, run_id: str, state: bytes, now: float) -> None:
    """Replace a workflow run's saved state."""
    await tx.later(PUT_WORKFLOW_STATE, [{"run_id": run_id, "body": bytes(state), "now": now}])
