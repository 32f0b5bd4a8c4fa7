"""`OpsTx`: the primitives `get`, `add` and `change` read the typed ops once, here, for every backend.

Each op of `_ops.py` goes to one method a backend implements (`_thread`, `_add_run`,
`_claim_thread`, …), so the memory store and SQL write only what an op does on their tables, never
the `match` over the ops again. A new op fails the type check (`assert_never`) here until it has its
method, and every backend fails to instantiate until it implements that method.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, TypeVar, assert_never, cast

from .._core.decisions import DecisionRecord
from .._core.grants import Grant
from .._core.requests import Request
from .._core.steps import StepKey, StepRecord
from .._core.votes import Vote
from ._ops import (
    AdvanceEscalation,
    AnyRef,
    CancelRun,
    Change,
    ClaimDelivery,
    ClaimRun,
    ClaimThread,
    ConsumePause,
    DecisionOf,
    Document,
    DocumentOf,
    DropStep,
    EndRun,
    EndStep,
    ExecutionOf,
    FanOut,
    FinishExecutions,
    FreeThread,
    GrantOf,
    New,
    NewDecisions,
    NewEvents,
    NewExecutions,
    NewGrants,
    NewMessages,
    NewPause,
    NewRun,
    NewStep,
    NewVote,
    PauseRun,
    PutDocument,
    Ref,
    ReleaseHold,
    RenewLease,
    ReopenRun,
    ResolveExecution,
    ResolveStep,
    RevokeGrant,
    RunChange,
    RunOf,
    Settled,
    StepOf,
    TakeOver,
    ThreadOf,
    WidenRequest,
)
from ._primitives import StoreTx
from ._records import ExecutionRecord, ExecutionResult, OutboxKind, RunRecord, ThreadRecord

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

R = TypeVar("R")


class OpsTx(StoreTx):
    """A backend's transaction: `get` / `add` / `change` dispatched once to one method per op."""

    # rows by key, new rows, changes

    async def get(self, ref: Ref[R]) -> R | None:
        found: object
        match cast(AnyRef, ref):
            case ThreadOf(thread_id=thread_id):
                found = await self._thread(thread_id)
            case RunOf(run_id=run_id):
                found = await self._run(run_id)
            case DecisionOf(request_id=request_id):
                found = await self._decision(request_id)
            case GrantOf(grant_id=grant_id):
                found = await self._grant(grant_id)
            case ExecutionOf(request_id=request_id):
                found = await self._execution(request_id)
            case StepOf(key=key):
                found = await self._step(key)
            case DocumentOf(namespace=namespace, key=key):
                found = await self._document(namespace, key)
            case other:
                assert_never(other)
        return cast("R | None", found)

    async def add(self, new: New) -> None:
        match new:
            case NewRun(run=run, thread=thread):
                await self._add_run(run, thread=thread)
            case NewMessages(run=run, messages=messages):
                await self._append_messages(run, messages)
            case NewPause(pause_id=pause_id, run_id=run_id, requests=requests, now=now):
                await self._add_pause(pause_id, run_id, requests, now)
            case NewDecisions(records=records):
                await self._add_decisions(records)
            case NewVote(vote=vote, seq=seq):
                await self._add_vote(vote, seq=seq)
            case NewEvents(kind=kind, request_ids=request_ids, now=now, step=step):
                await self._add_events(kind, request_ids, now, step=step)
            case NewGrants(grants=grants):
                await self._add_grants(grants)
            case NewExecutions(request_ids=request_ids, run_id=run_id, now=now):
                await self._mark_executing(request_ids, run_id, now)
            case NewStep(key=key, now=now):
                await self._add_step(key, now)
            case _:
                assert_never(new)

    async def change(self, change: Change) -> bool:
        match change:
            case (
                PauseRun()
                | EndRun()
                | ClaimRun()
                | CancelRun()
                | RenewLease()
                | ReleaseHold()
                | TakeOver()
                | ReopenRun()
            ):
                return await self._update_run(change)
            case ClaimThread(thread_id=thread_id, run_id=run_id, expect=expect, again=again):
                return await self._claim_thread(thread_id, run_id, expect=expect, again=again)
            case FreeThread(thread_id=thread_id, run_id=run_id):
                await self._free_thread(thread_id, run_id)
            case ConsumePause(pause_id=pause_id):
                return await self._consume_pause(pause_id)
            case AdvanceEscalation(request_id=request_id, step=step, next_at=next_at):
                return await self._advance_escalation(request_id, step, next_at)
            case WidenRequest(request=request):
                await self._widen_request(request)
            case RevokeGrant(grant_id=grant_id, now=now):
                return await self._revoke_grant(grant_id, now)
            case FinishExecutions(executions=executions, now=now):
                await self._finish_executions(executions, now)
            case ResolveExecution(request_id=request_id, result=result, now=now, status=status):
                return await self._resolve_execution(request_id, result, now, status)
            case EndStep() | ResolveStep() | DropStep():
                return await self._step_change(change)
            case PutDocument(namespace=namespace, key=key, body=body, now=now, expect=expect):
                return await self._put_document(namespace, key, body, now, expect=expect)
            case FanOut() | ClaimDelivery() | Settled():
                return await self._outbox_change(change)
            case _:
                assert_never(change)
        return True

    # what each op does, per backend (see `_ops.py` for what each means)

    @abstractmethod
    async def _thread(self, thread_id: str) -> ThreadRecord | None: ...
    @abstractmethod
    async def _run(self, run_id: str) -> RunRecord | None: ...
    @abstractmethod
    async def _decision(self, request_id: str) -> DecisionRecord | None: ...
    @abstractmethod
    async def _grant(self, grant_id: str) -> Grant | None: ...
    @abstractmethod
    async def _execution(self, request_id: str) -> ExecutionRecord | None: ...
    @abstractmethod
    async def _step(self, key: StepKey) -> StepRecord | None: ...
    @abstractmethod
    async def _document(self, namespace: str, key: str) -> Document | None: ...

    @abstractmethod
    async def _add_run(self, run: RunRecord, *, thread: ThreadRecord | None = None) -> None: ...
    @abstractmethod
    async def _append_messages(self, run: RunRecord, new: Sequence[ModelMessage]) -> None: ...
    @abstractmethod
    async def _add_pause(self, pause_id: str, run_id: str, requests: Sequence[Request], now: float) -> None: ...
    @abstractmethod
    async def _add_decisions(self, records: Sequence[DecisionRecord]) -> None: ...
    @abstractmethod
    async def _add_vote(self, vote: Vote, *, seq: int) -> None: ...
    @abstractmethod
    async def _add_events(
        self, kind: OutboxKind, request_ids: Sequence[str], now: float, *, step: int | None = None
    ) -> None: ...
    @abstractmethod
    async def _add_grants(self, grants: Sequence[Grant]) -> None: ...
    @abstractmethod
    async def _mark_executing(self, request_ids: Sequence[str], run_id: str, now: float) -> None: ...
    @abstractmethod
    async def _add_step(self, key: StepKey, now: float) -> None: ...

    @abstractmethod
    async def _update_run(self, change: RunChange) -> bool: ...
    @abstractmethod
    async def _claim_thread(self, thread_id: str, run_id: str, *, expect: str | None, again: bool = False) -> bool: ...
    @abstractmethod
    async def _free_thread(self, thread_id: str, run_id: str) -> None: ...
    @abstractmethod
    async def _consume_pause(self, pause_id: str) -> bool: ...
    @abstractmethod
    async def _advance_escalation(self, request_id: str, step: int, next_at: float | None) -> bool: ...
    @abstractmethod
    async def _widen_request(self, request: Request) -> None: ...
    @abstractmethod
    async def _revoke_grant(self, grant_id: str, now: float) -> bool: ...
    @abstractmethod
    async def _finish_executions(self, executions: Sequence[ExecutionResult], now: float) -> None: ...
    @abstractmethod
    async def _resolve_execution(
        self, request_id: str, result: bytes, now: float, status: Literal["done", "unknown"]
    ) -> bool: ...
    @abstractmethod
    async def _step_change(self, change: EndStep | ResolveStep | DropStep) -> bool: ...
    @abstractmethod
    async def _put_document(self, namespace: str, key: str, body: str, now: float, *, expect: int | None) -> bool: ...
    @abstractmethod
    async def _outbox_change(self, change: FanOut | ClaimDelivery | Settled) -> bool: ...
