"""The verbs of threads and runs: starting, leasing, pausing, finishing, cancelling and reopening a run."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NoReturn

from pydantic import TypeAdapter

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DecisionRecord
from ..._core.finite import storable_text
from ..._core.grants import Grant
from ..._core.requests import Request
from ..._core.starting import StartAsk, check_thread
from ...exceptions import PauseConsumed, RunConflict, RunNotFound, ThreadBusy
from .._messages import decode_history
from .._ops import (
    CancelRun,
    ClaimThread,
    ConsumePause,
    EndRun,
    FreeThread,
    NewEvents,
    NewMessages,
    NewPause,
    NewRun,
    PauseRun,
    ReleaseHold,
    RenewLease,
    ReopenRun,
    RunOf,
    TakeOver,
    ThreadOf,
)
from .._primitives import REMOTE_TASKS, WORKFLOW_STATES, StoreTx, TxStore, new_thread
from .._records import BegunRun, ExecutionResult, RemoteTask, RunRecord, RunStart, RunStatus, ThreadRecord
from ._steps import finish, lost_lease, record

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage

REMOTE_TASK_ADAPTER: TypeAdapter[RemoteTask] = TypeAdapter(RemoteTask)
"""A remote task as the document that holds it (JSON)."""


class RunVerbs(TxStore):
    """`RunStore`'s verbs of threads and runs, the message log, workflow state and remote tasks."""

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        async def work(tx: StoreTx) -> ThreadRecord | None:
            return await tx.get(ThreadOf(thread_id))

        return await self._read(work)

    async def begin_run(
        self, start: RunStart, *, ask: StartAsk | None = None, grants_of: str | None = None
    ) -> BegunRun:
        thread_id, run_id = start.thread_id, start.run_id
        Found = tuple[ThreadRecord | None, RunRecord | None, list[bytes], list[Grant] | None]

        async def work(tx: StoreTx) -> Found:
            thread = await tx.get(ThreadOf(thread_id))
            if ask is not None:
                check_thread(ask, thread)
            if thread is not None:
                if thread.active_run_id is not None:
                    return thread, None, [], None
                if not await tx.change(ClaimThread(thread_id, run_id, expect=None)):
                    raise _thread_changed(run_id, thread_id)
            run = start.run(agent=thread.agent if thread is not None else None)
            await tx.add(
                NewRun(run, thread=new_thread(run, owner=start.owner, agent=start.agent) if thread is None else None)
            )
            history = await tx.history(thread_id) if thread is not None else []
            return thread, run, history, await tx.active_grants(grants_of, start.now)

        async def lost(tx: StoreTx) -> NoReturn:
            raise _thread_changed(run_id, thread_id)  # another process created the same new thread first

        thread, run, bodies, grants = await self._write(work, race=lost, durable=False)
        return BegunRun(thread=thread, run=run, history=decode_history(bodies), grants=grants)

    async def start_run(
        self,
        start: RunStart,
        *,
        expect_active: str | None,
        skips: Sequence[DecisionRecord] = (),
        audit: Sequence[AuditEvent] = (),
        supersede_pause: str | None = None,
        durable: bool = True,
    ) -> RunRecord:
        thread_id, run_id = start.thread_id, start.run_id
        run = start.run(resume_pause_id=supersede_pause)

        async def work(tx: StoreTx) -> RunRecord:
            if supersede_pause is not None and audit:
                await tx.lock_audit()  # before the thread's and the pause's rows: the one lock order
            opens = await tx.get(ThreadOf(thread_id)) is None
            if not opens and not await tx.change(ClaimThread(thread_id, run_id, expect=expect_active)):
                raise _thread_changed(run_id, thread_id)
            if supersede_pause is not None:
                if not await tx.change(ConsumePause(supersede_pause)):
                    raise PauseConsumed(run_id, "the pause was resumed by someone else meanwhile")
                assert expect_active is not None
                await tx.change(CancelRun(run_id=expect_active, now=start.now, only_paused=False))
                await record(tx, skips, audit)
            await tx.add(NewRun(run, thread=new_thread(run, owner=start.owner, agent=start.agent) if opens else None))
            return run

        async def lost(tx: StoreTx) -> NoReturn:
            raise _thread_changed(run_id, thread_id)  # another process got there first, or decided a skip

        return await self._write(work, race=lost, durable=durable)

    async def get_run(self, run_id: str) -> RunRecord:
        async def work(tx: StoreTx) -> RunRecord:
            run = await tx.get(RunOf(run_id))
            if run is None:
                raise RunNotFound(run_id)
            return run

        return await self._read(work)

    async def renew_lease(self, run_id: str, holder: str, until: float) -> bool:
        async def work(tx: StoreTx) -> bool:
            return await tx.change(RenewLease(run_id=run_id, holder=holder, until=until))

        return await self._write(work)

    async def release_hold(self, run_id: str, holder: str) -> bool:
        async def work(tx: StoreTx) -> bool:
            return await tx.change(ReleaseHold(run_id=run_id, holder=holder))

        return await self._write(work)

    async def take_over(
        self, run_id: str, *, holder: str, until: float, now: float, dead_holders: Sequence[str]
    ) -> bool:
        async def work(tx: StoreTx) -> bool:
            holders: list[str | None] = [*dead_holders] or [None]
            for dead in holders:
                if await tx.change(TakeOver(run_id=run_id, holder=holder, until=until, now=now, dead=dead)):
                    return True
            return False

        return await self._write(work)

    async def save_pause(
        self,
        run: RunRecord,
        *,
        holder: str,
        pause_id: str,
        new_messages: Sequence[ModelMessage],
        requests: Sequence[Request],
        now: float,
        executions: Sequence[ExecutionResult] = (),
        workflow_state: bytes | None = None,
        hold_until: float | None = None,
        keeper: str | None = None,
    ) -> None:
        async def work(tx: StoreTx) -> None:
            pause = PauseRun(
                run_id=run.run_id, pause_id=pause_id, holder=holder, now=now, hold_until=hold_until, keeper=keeper
            )
            if not await tx.change(pause):
                raise lost_lease(run.run_id)
            await finish(tx, executions, now)
            await tx.add(NewMessages(run, new_messages))
            await tx.add(NewPause(pause_id, run.run_id, requests, now))
            await tx.add(NewEvents("request.opened", [r.request_id for r in requests], now))
            await _run_updated(tx, run, now)
            if workflow_state is not None:
                await tx.put_document(WORKFLOW_STATES, run.run_id, workflow_state.decode(), now)

        await self._write(work)

    async def finish_run(
        self,
        run: RunRecord,
        *,
        holder: str,
        new_messages: Sequence[ModelMessage],
        status: RunStatus,
        output: str | None,
        error: str | None,
        now: float,
        executions: Sequence[ExecutionResult] = (),
        workflow_state: bytes | None = None,
    ) -> None:
        async def work(tx: StoreTx) -> None:
            end = EndRun(
                run_id=run.run_id,
                status=status,
                output=storable_text(output),  # a model's or a tool's text: kept, as every store can
                error=storable_text(error),
                holder=holder,
                now=now,
            )
            if not await tx.change(end):
                raise lost_lease(run.run_id)
            await finish(tx, executions, now)
            await tx.add(NewMessages(run, new_messages))
            if workflow_state is not None:
                await tx.put_document(WORKFLOW_STATES, run.run_id, workflow_state.decode(), now)
            await tx.change(FreeThread(run.thread_id, run.run_id))
            await _run_updated(tx, run, now)

        await self._write(work)

    async def cancel_run(
        self, run: RunRecord, *, now: float, skips: Sequence[DecisionRecord], audit: Sequence[AuditEvent] = ()
    ) -> None:
        async def work(tx: StoreTx) -> None:
            if audit:
                await tx.lock_audit()  # before the pause's row: the one lock order
            if run.pause_id is not None:
                await tx.change(ConsumePause(run.pause_id))
            existing = await tx.decisions([d.request_id for d in skips])
            await record(tx, [d for d in skips if d.request_id not in existing], audit)
            if await tx.change(CancelRun(run_id=run.run_id, now=now, only_paused=True)):
                await _run_updated(tx, run, now)
            await tx.change(FreeThread(run.thread_id, run.run_id))

        await self._write(work, race=work)  # a person decided one of the skipped requests meanwhile: theirs is kept

    # the message log

    async def load_messages(self, thread_id: str) -> list[ModelMessage]:
        async def work(tx: StoreTx) -> list[bytes]:
            return await tx.history(thread_id)

        return decode_history(await self._read(work))

    # remote delegates

    async def set_remote_task(self, run_id: str, *, url: str, task_id: str, context_id: str) -> None:
        async def work(tx: StoreTx) -> None:
            task = RemoteTask(url=url, task_id=task_id, context_id=context_id)
            await tx.put_document(REMOTE_TASKS, run_id, REMOTE_TASK_ADAPTER.dump_json(task).decode(), time.time())

        await self._write(work, race=work)

    async def remote_task(self, run_id: str) -> RemoteTask | None:
        async def work(tx: StoreTx) -> RemoteTask | None:
            found = await tx.document(REMOTE_TASKS, run_id)
            return None if found is None else REMOTE_TASK_ADAPTER.validate_json(found.body)

        return await self._read(work)

    # workflows

    async def workflow_state(self, run_id: str) -> bytes | None:
        async def work(tx: StoreTx) -> bytes | None:
            found = await tx.document(WORKFLOW_STATES, run_id)
            return None if found is None else found.body.encode()

        return await self._read(work)

    async def save_workflow_state(
        self,
        run: RunRecord,
        *,
        holder: str,
        state: bytes,
        now: float,
        new_messages: Sequence[ModelMessage] = (),
    ) -> None:
        async def work(tx: StoreTx) -> None:
            held = await tx.get(RunOf(run.run_id))
            if held is None or held.lease_holder != holder:
                raise lost_lease(run.run_id)
            await tx.add(NewMessages(run, new_messages))
            await tx.put_document(WORKFLOW_STATES, run.run_id, state.decode(), now)

        await self._write(work, durable=False)

    async def reopen_run(self, run: RunRecord, *, holder: str, until: float, now: float) -> RunRecord:
        async def work(tx: StoreTx) -> RunRecord:
            current = await tx.get(RunOf(run.run_id))
            if current is None:
                raise RunNotFound(run.run_id)
            if current.status != "failed":
                raise RunConflict(run.run_id, f"the run is {current.status}; only a failed run is taken up again")
            if not await tx.change(ClaimThread(current.thread_id, run.run_id, expect=None, again=True)):
                raise ThreadBusy(run.run_id, f"thread {current.thread_id!r} has moved on to another run")
            if not await tx.change(ReopenRun(run_id=run.run_id, holder=holder, until=until, now=now)):
                raise RunConflict(run.run_id, "another process took the run up first")
            return replace(
                current,
                status="running",
                error=None,
                lease_holder=holder,
                lease_expires_at=until,
                updated_at=now,
                revision=current.revision + 1,
            )

        return await self._write(work)


def _thread_changed(run_id: str, thread_id: str) -> RunConflict:
    return RunConflict(run_id, f"thread {thread_id!r} changed underneath this run; try again")


async def _run_updated(tx: StoreTx, run: RunRecord, now: float) -> None:
    """A top-level run paused, ended or was cancelled: an event for its A2A task's push notifications."""
    if run.parent_run_id is None:
        await tx.add(NewEvents("run.updated", [run.run_id], now))
