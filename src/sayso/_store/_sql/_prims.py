"""`SqlTx`: the store's transaction primitives on SQLite and PostgreSQL, each one or two constant statements.

Writes whose outcome nobody reads go through `Tx.later`, so PostgreSQL sends consecutive ones
as one statement; a primitive that reports an outcome (a conditional change, a read) runs at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Literal, TypeVar, assert_never

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DECISION_ADAPTER, DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import REQUEST_ADAPTER, Request, escalation_due
from ..._core.steps import StepKey, StepRecord
from ..._core.votes import VOTE_ADAPTER, Vote
from .._messages import encode_messages
from .._ops import (
    CancelRun,
    ClaimRun,
    Document,
    DropStep,
    EndRun,
    EndStep,
    PauseRun,
    ReleaseHold,
    RenewLease,
    ReopenRun,
    ResolveStep,
    RunChange,
    TakeOver,
)
from .._primitives import Deciding
from .._records import (
    GRANTS_READ_AT_ONCE,
    DueEscalation,
    ExecutionRecord,
    ExecutionResult,
    OutboxKind,
    PauseState,
    RequestWithRun,
    RunRecord,
    ThreadRecord,
)
from . import _chain
from . import _rows as q
from ._outbox import SqlOutboxTx
from ._tx import Tx

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

R = TypeVar("R")


class SqlTx(SqlOutboxTx):
    """The primitives over one open SQL transaction (`_tx.Tx`); the outbox's come from `SqlOutboxTx`."""

    __slots__ = ("tx",)

    def __init__(self, tx: Tx) -> None:
        self.tx = tx

    # threads

    async def _thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self.tx.one(q.GET_THREAD, {"thread_id": thread_id})
        return q.thread_record(row) if row is not None else None

    async def _claim_thread(self, thread_id: str, run_id: str, *, expect: str | None, again: bool = False) -> bool:
        params = {"thread_id": thread_id, "run_id": run_id}
        if again:
            sql = q.TAKE_THREAD_BACK
        elif expect is None:
            sql = q.CLAIM_FREE_THREAD
        else:
            sql, params["expect"] = q.CLAIM_THREAD_FROM, expect
        return await self.tx.run(sql, params) == 1

    async def _free_thread(self, thread_id: str, run_id: str) -> None:
        await self.tx.later(q.FREE_THREAD, [{"thread_id": thread_id, "run_id": run_id}])

    # runs

    async def _run(self, run_id: str) -> RunRecord | None:
        row = await self.tx.one(q.GET_RUN, {"run_id": run_id})
        return q.run_record(row) if row is not None else None

    async def _add_run(self, run: RunRecord, *, thread: ThreadRecord | None = None) -> None:
        if thread is not None:
            params = {
                "thread_id": thread.thread_id,
                "owner": thread.owner,
                "agent": thread.agent,
                "run_id": thread.active_run_id,
                "now": thread.created_at,
                "parent_run_id": thread.parent_run_id,
            }
            await self.tx.later(q.INSERT_THREAD, [params])
        await self.tx.later(q.INSERT_RUN, [q.run_params(run)])

    async def _update_run(self, change: RunChange) -> bool:
        tx, params = self.tx, {"run_id": change.run_id}
        match change:
            case PauseRun(pause_id=pause_id, holder=holder, now=now, hold_until=hold_until, keeper=keeper):
                held = {"keeper": (keeper or holder) if hold_until is not None else None, "hold_until": hold_until}
                values = {"pause_id": pause_id, "holder": holder, "now": now, **held}
                changed = await tx.run(q.PAUSE_RUN, {**params, **values})
            case EndRun(status=status, output=output, error=error, holder=holder, now=now):
                values = {"status": status, "output": output, "error": error, "holder": holder, "now": now}
                changed = await tx.run(q.FINISH_RUN, {**params, **values})
            case ClaimRun(pause_id=pause_id, holder=holder, until=until, now=now):
                values = {"pause_id": pause_id, "holder": holder, "until": until, "now": now}
                await tx.later(q.CLAIM_RUN, [{**params, **values}])
                return True
            case CancelRun(now=now, only_paused=only_paused):
                changed = await tx.run(q.CANCEL_PAUSED_RUN if only_paused else q.CANCEL_RUN, {**params, "now": now})
            case RenewLease(holder=holder, until=until):
                changed = await tx.run(q.RENEW_LEASE, {**params, "holder": holder, "until": until})
            case ReleaseHold(holder=holder):
                changed = await tx.run(q.RELEASE_HOLD, {**params, "holder": holder})
            case TakeOver(holder=holder, until=until, now=now, dead=dead):
                values = {"holder": holder, "until": until, "now": now, "dead": dead}
                changed = await tx.run(q.TAKE_OVER, {**params, **values})
            case ReopenRun(holder=holder, until=until, now=now):
                changed = await tx.run(q.REOPEN_RUN, {**params, "holder": holder, "until": until, "now": now})
            case _:
                assert_never(change)
        return changed == 1

    # the message log

    async def _append_messages(self, run: RunRecord, new: Sequence[ModelMessage]) -> None:
        if not new:
            return
        params = {
            "thread_id": run.thread_id,
            "run_id": run.run_id,
            "count": len(new),
            "body": encode_messages(new),
        }
        await self.tx.later(q.APPEND_MESSAGES, [params])

    async def history(self, thread_id: str) -> list[bytes]:
        return [bytes(row["body"]) for row in await self.tx.all(q.HISTORY, {"thread_id": thread_id})]

    # pauses, requests, decisions

    async def _add_pause(self, pause_id: str, run_id: str, requests: Sequence[Request], now: float) -> None:
        await self.tx.later(q.INSERT_PAUSE, [{"pause_id": pause_id, "run_id": run_id, "now": now}])
        if not requests:
            return
        await self.tx.later(
            q.INSERT_REQUEST,
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
                    "escalate_at": escalation_due(r, 0),
                    "body": REQUEST_ADAPTER.dump_json(r),
                    "routed": r.routing is not None,
                }
                for position, r in enumerate(requests)
            ],
        )
        deciders = [
            {"request_id": r.request_id, "principal": name}
            for r in requests
            if r.routing is not None
            for name in r.routing.deciders(r.principal)
        ]
        if deciders:
            await self.tx.later(q.INSERT_DECIDER, deciders)

    async def _consume_pause(self, pause_id: str) -> bool:
        return await self.tx.run(q.CONSUME_PAUSE, {"pause_id": pause_id}) == 1

    async def deciding(self, request_id: str) -> Deciding | None:
        rows = await self.tx.all(q.PAUSE_OF_REQUEST, {"request_id": request_id})
        if not rows:
            return None
        requests, decisions = q.requests_and_decisions(rows)
        position = next(i for i, r in enumerate(requests) if r.request_id == request_id)
        row = rows[position]
        found = RequestWithRun(
            request=requests[position],
            pause_status=row["pause_status"],
            decision=decisions.get(request_id),
            run=q.run_record(row),
        )
        state = PauseState(run_id=found.run.run_id, status=found.pause_status, requests=requests, decisions=decisions)
        return Deciding(found=found, state=state, pause_id=row["request_pause_id"])

    async def _decision(self, request_id: str) -> DecisionRecord | None:
        row = await self.tx.one(q.GET_DECISION, {"request_id": request_id})
        return None if row is None else q.decision_of(row)

    async def _add_decisions(self, records: Sequence[DecisionRecord]) -> None:
        await self.tx.later(
            q.INSERT_DECISION,
            [
                {
                    "request_id": d.request_id,
                    "kind": d.decision.kind,
                    "by": d.by,
                    "principal": d.principal,
                    "decided_at": d.decided_at,
                    "via": d.via,
                    "closed": d.closed,
                    "body": DECISION_ADAPTER.dump_json(d.decision),
                }
                for d in records
            ],
        )
        await self.tx.later(q.MARK_DECIDED, [{"request_id": d.request_id} for d in records])

    async def votes(self, request_id: str) -> list[Vote]:
        return [
            VOTE_ADAPTER.validate_json(row["body"]) for row in await self.tx.all(q.VOTES, {"request_id": request_id})
        ]

    async def _add_vote(self, vote: Vote, *, seq: int) -> None:
        row = {"request_id": vote.request_id, "seq": seq, "principal": vote.principal, "voted_at": vote.voted_at}
        await self.tx.later(q.INSERT_VOTE, [{**row, "body": VOTE_ADAPTER.dump_json(vote)}])

    async def _add_events(
        self, kind: OutboxKind, request_ids: Sequence[str], now: float, *, step: int | None = None
    ) -> None:
        if request_ids:
            await self.tx.later(
                q.INSERT_OUTBOX,
                [
                    {
                        "event_id": _event_id(),
                        "kind": kind,
                        "request_id": r,
                        "created_at": now,
                        "fanned_out": False,
                        "step": step,
                    }
                    for r in request_ids
                ],
            )

    # escalation timers

    async def due_escalations(self, now: float, limit: int) -> list[DueEscalation]:
        rows = await self.tx.all(q.DUE_ESCALATIONS, {"now": now, "limit": limit})
        return [DueEscalation(request_id=r["request_id"], step=r["escalations"], due_at=r["escalate_at"]) for r in rows]

    async def _advance_escalation(self, request_id: str, step: int, next_at: float | None) -> bool:
        params = {"request_id": request_id, "step": step, "next_at": next_at}
        return await self.tx.run(q.ADVANCE_ESCALATION, params) == 1

    async def _widen_request(self, request: Request) -> None:
        params = {"request_id": request.request_id, "body": REQUEST_ADAPTER.dump_json(request)}
        await self.tx.run(q.REPLACE_REQUEST_BODY, params)
        await self.tx.run(q.DELETE_DECIDERS, {"request_id": request.request_id})
        if request.routing is not None:
            names = request.routing.deciders(request.principal)
            await self.tx.later(q.INSERT_DECIDER, [{"request_id": request.request_id, "principal": n} for n in names])

    # grants and the audit chain

    async def _add_grants(self, grants: Sequence[Grant]) -> None:
        if grants:
            await self.tx.later(q.INSERT_GRANT, [asdict(g) for g in grants])

    async def active_grants(self, principal: str | None, now: float) -> list[Grant] | None:
        if principal is None:
            return None
        params = {"principal": principal, "now": now, "limit": GRANTS_READ_AT_ONCE + 1}
        rows = await self.tx.all(q.ACTIVE_GRANTS, params)
        return None if len(rows) > GRANTS_READ_AT_ONCE else [q.grant_record(row) for row in rows]

    async def _revoke_grant(self, grant_id: str, now: float) -> bool:
        return await self.tx.run(q.REVOKE_GRANT, {"grant_id": grant_id, "now": now}) == 1

    async def _grant(self, grant_id: str) -> Grant | None:
        row = await self.tx.one(q.GET_GRANT, {"grant_id": grant_id})
        return None if row is None else q.grant_record(row)

    async def lock_audit(self) -> None:
        await _chain.lock_audit(self.tx)

    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        await _chain.append_audit(self.tx, bodies)

    # the ledger

    async def _execution(self, request_id: str) -> ExecutionRecord | None:
        row = await self.tx.one(q.GET_EXECUTION, {"request_id": request_id})
        if row is None:
            return None
        result = row["result"]
        return ExecutionRecord(
            request_id=request_id, status=row["status"], result=None if result is None else bytes(result)
        )

    async def _mark_executing(self, request_ids: Sequence[str], run_id: str, now: float) -> None:
        await self.tx.later(q.INSERT_EXECUTION, [{"request_id": r, "run_id": run_id, "now": now} for r in request_ids])

    async def _finish_executions(self, executions: Sequence[ExecutionResult], now: float) -> None:
        await self.tx.later(
            q.FINISH_EXECUTION,
            [
                {"request_id": done.request_id, "status": done.status, "result": done.result, "now": now}
                for done in executions
            ],
        )

    async def _resolve_execution(
        self, request_id: str, result: bytes, now: float, status: Literal["done", "unknown"]
    ) -> bool:
        params = {"request_id": request_id, "status": status, "result": result, "now": now}
        return await self.tx.run(q.RESOLVE_EXECUTION, params) == 1

    # the step journal

    async def _step(self, key: StepKey) -> StepRecord | None:
        row = await self.tx.one(q.GET_STEP, _step_params(key))
        if row is None:
            return None
        result = row["result"]
        return StepRecord(status=row["status"], result=None if result is None else bytes(result))

    async def _add_step(self, key: StepKey, now: float) -> None:
        await self.tx.run(q.INSERT_STEP, {**_step_params(key), "now": now})

    async def _step_change(self, change: EndStep | ResolveStep | DropStep) -> bool:
        params = _step_params(change.key)
        match change:
            case EndStep(status=status, result=result, now=now):
                await self.tx.later(q.END_STEP, [{**params, "status": status, "result": bytes(result), "now": now}])
                return True
            case ResolveStep(now=now):
                return await self.tx.run(q.RESOLVE_STEP, {**params, "now": now}) == 1
            case DropStep():
                return await self.tx.run(q.DROP_STEP, params) == 1
            case _:
                assert_never(change)

    # documents

    async def _document(self, namespace: str, key: str) -> Document | None:
        row = await self.tx.one(q.GET_DOCUMENT, {"namespace": namespace, "key": key})
        return None if row is None else Document(body=str(row["value"]), revision=int(row["revision"]))

    async def _put_document(
        self, namespace: str, key: str, body: str, now: float, *, expect: int | None = None
    ) -> bool:
        params = {"namespace": namespace, "key": key, "value": body, "now": now}
        if expect is None:
            await self.tx.later(q.PUT_DOCUMENT, [params])
            return True
        if expect == 0:
            return await self.tx.run(q.ADD_DOCUMENT, params) == 1
        return await self.tx.run(q.REPLACE_DOCUMENT, {**params, "expect": expect}) == 1


def _event_id() -> str:
    """An outbox event's id: random, so ids never repeat across databases."""
    return f"evt_{secrets.token_urlsafe(12)}"


def _step_params(key: StepKey) -> dict[str, str | int]:
    return {"run_id": key.run_id, "scope": key.scope, "name": key.name, "occurrence": key.occurrence}
