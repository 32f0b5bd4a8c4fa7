"""The constant statements of the SQL backend's primitives, and rows ↔ records.

Statements are written once with named parameters and run unchanged on SQLite and PostgreSQL,
except where a `pg=` variant says otherwise; `_prims.SqlTx` runs them, one or two per primitive.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._core.decisions import DECISION_ADAPTER, DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER, Request
from .._records import RunRecord, ThreadRecord
from ._tx import Row, Sql

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
    "lease_holder",
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

GET_THREAD = Sql(
    "SELECT thread_id, owner, agent, active_run_id, created_at, parent_run_id FROM threads WHERE thread_id = :thread_id"
)
INSERT_THREAD = Sql(
    "INSERT INTO threads (thread_id, owner, agent, active_run_id, created_at, parent_run_id) "
    "VALUES (:thread_id, :owner, :agent, :run_id, :now, :parent_run_id)"
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
    "UPDATE runs SET status = 'paused', pause_id = :pause_id, lease_holder = :keeper, lease_expires_at = :hold_until, "
    f"{_BUMP} WHERE run_id = :run_id AND lease_holder = :holder"
)
"""Pause a run this process still holds: the lease check and the change are one conditional update.

The lease goes (`keeper` and `hold_until` are NULL), or stays as the hold of a pause whose live call only
this process can answer."""
FINISH_RUN = Sql(
    "UPDATE runs SET status = :status, output = :output, error = :error, pause_id = NULL, lease_holder = NULL, "
    f"lease_expires_at = NULL, {_BUMP} WHERE run_id = :run_id AND lease_holder = :holder"
)
CANCEL_RUN = Sql(f"UPDATE runs SET status = 'cancelled', pause_id = NULL, {_BUMP} WHERE run_id = :run_id")
CANCEL_PAUSED_RUN = Sql(
    f"UPDATE runs SET status = 'cancelled', pause_id = NULL, {_BUMP} WHERE run_id = :run_id AND status = 'paused'"
)
CLAIM_RUN = Sql(
    "UPDATE runs SET status = 'running', resume_pause_id = :pause_id, pause_id = NULL, lease_holder = :holder, "
    f"lease_expires_at = :until, {_BUMP} WHERE run_id = :run_id"
)
RENEW_LEASE = Sql(
    "UPDATE runs SET lease_expires_at = :until WHERE run_id = :run_id AND lease_holder = :holder "
    "AND status IN ('running', 'paused')"
)
"""A running run's lease, or a held pause's hold (a paused run has a holder only while held)."""
RELEASE_HOLD = Sql(
    "UPDATE runs SET lease_holder = NULL, lease_expires_at = NULL "
    "WHERE run_id = :run_id AND lease_holder = :holder AND status = 'paused'"
)
TAKE_OVER = Sql(
    f"UPDATE runs SET lease_holder = :holder, lease_expires_at = :until, {_BUMP} "
    "WHERE run_id = :run_id AND status = 'running' AND (lease_expires_at < :now OR lease_holder = :dead)"
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
    "expires_at, escalate_at, escalations, body, routed) VALUES (:request_id, :pause_id, :position, :run_id, "
    ":thread_id, :agent_path, :kind, 'open', :created_at, :expires_at, :escalate_at, 0, :body, :routed)"
)
INSERT_DECIDER = Sql("INSERT INTO request_deciders (request_id, principal) VALUES (:request_id, :principal)")
DELETE_DECIDERS = Sql("DELETE FROM request_deciders WHERE request_id = :request_id")
REPLACE_REQUEST_BODY = Sql("UPDATE requests SET body = :body WHERE request_id = :request_id")
VOTES = Sql("SELECT request_id, body FROM votes WHERE request_id = :request_id ORDER BY seq")
INSERT_VOTE = Sql(
    "INSERT INTO votes (request_id, seq, principal, voted_at, body) VALUES (:request_id, :seq, :principal, "
    ":voted_at, :body)"
)
_DECISION = (
    'd.body AS decision_body, d."by" AS decision_by, d.principal AS decision_principal, d.decided_at, '
    "d.via AS decision_via, d.closed AS decision_closed"
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
    'INSERT INTO decisions (request_id, kind, "by", principal, decided_at, via, closed, body) '
    "VALUES (:request_id, :kind, :by, :principal, :decided_at, :via, :closed, :body)"
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
`requests (expires_at) WHERE status = 'open' AND expires_at IS NOT NULL`): the sweep reads what expired, not
every open request."""

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
    "INSERT INTO outbox (event_id, kind, request_id, created_at, fanned_out, step) "
    "VALUES (:event_id, :kind, :request_id, :created_at, :fanned_out, :step)"
)

# escalation timers

DUE_ESCALATIONS = Sql(
    "SELECT r.request_id, r.escalations, r.escalate_at FROM requests r JOIN pauses p ON p.pause_id = r.pause_id "
    "WHERE r.status = 'open' AND r.escalate_at IS NOT NULL AND r.escalate_at <= :now AND p.status = 'open' "
    "ORDER BY r.escalate_at LIMIT :limit"
)
"""Open requests whose next step is due, read through the partial index `ix_requests_escalating`."""
ADVANCE_ESCALATION = Sql(
    "UPDATE requests SET escalations = :step + 1, escalate_at = :next_at "
    "WHERE request_id = :request_id AND escalations = :step AND status = 'open'"
)
"""Conditional: of two replicas firing the same step, one does (the other's update waits, then matches nothing)."""

# the step journal, threads taken back, failed runs reopened, grants by id

_STEP = "run_id = :run_id AND scope = :scope AND name = :name AND occurrence = :occurrence"
GET_STEP = Sql(f"SELECT status, result FROM steps WHERE {_STEP}")
INSERT_STEP = Sql(
    "INSERT INTO steps (run_id, scope, name, occurrence, status, started_at) "
    "VALUES (:run_id, :scope, :name, :occurrence, 'started', :now)"
)
END_STEP = Sql(f"UPDATE steps SET status = :status, result = :result, finished_at = :now WHERE {_STEP}")
RESOLVE_STEP = Sql(f"UPDATE steps SET status = 'unknown', finished_at = :now WHERE {_STEP} AND status = 'started'")
"""Resolve a step found cut off: of several runs finding it so, one changes it."""
DROP_STEP = Sql(f"DELETE FROM steps WHERE {_STEP} AND status = 'started'")

TAKE_THREAD_BACK = Sql(
    "UPDATE threads SET active_run_id = :run_id "
    "WHERE thread_id = :thread_id AND (active_run_id IS NULL OR active_run_id = :run_id)"
)
REOPEN_RUN = Sql(
    "UPDATE runs SET status = 'running', error = NULL, lease_holder = :holder, lease_expires_at = :until, "
    f"{_BUMP} WHERE run_id = :run_id AND status = 'failed'"
)
REVOKE_GRANT = Sql("UPDATE grants SET revoked_at = :now WHERE grant_id = :grant_id AND revoked_at IS NULL")
GET_GRANT = Sql(f"SELECT {_GRANT} FROM grants WHERE grant_id = :grant_id")
PUT_DOCUMENT = Sql(
    "INSERT INTO marks (namespace, key, value, updated_at, revision) VALUES (:namespace, :key, :value, :now, 1) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at, "
    "revision = marks.revision + 1"
)
"""Write a document whatever its revision, in one statement (an upsert on its namespace and key)."""
ADD_DOCUMENT = Sql(
    "INSERT INTO marks (namespace, key, value, updated_at, revision) VALUES (:namespace, :key, :value, :now, 1) "
    "ON CONFLICT (namespace, key) DO NOTHING"
)
REPLACE_DOCUMENT = Sql(
    "UPDATE marks SET value = :value, updated_at = :now, revision = revision + 1 "
    "WHERE namespace = :namespace AND key = :key AND revision = :expect"
)
GET_DOCUMENT = Sql("SELECT value, revision FROM marks WHERE namespace = :namespace AND key = :key")


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
        parent_run_id=row["parent_run_id"],
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
        closed=bool(row["decision_closed"]),
    )


def requests_and_decisions(rows: Sequence[Row]) -> tuple[list[Request], dict[str, DecisionRecord]]:
    """Requests and the decisions taken for them, from rows of `PAUSE_REQUESTS` or `RUN_REQUESTS`."""
    requests = [REQUEST_ADAPTER.validate_json(row["body"]) for row in rows]
    decisions = {d.request_id: d for d in map(decision_of, rows) if d is not None}
    return requests, decisions
