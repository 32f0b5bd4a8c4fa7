"""The verbs of decisions and the ledger: the first decision winning, consuming a pause, deciding in one commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from ..._core.audit_events import AuditEvent
from ..._core.deciding import DecisionAsk, ResumeClaim, judge
from ..._core.decisions import DecisionRecord
from ..._core.grants import Grant
from ...exceptions import PauseConsumed, StoreError
from .._holders import holder_is_dead
from .._ops import ConsumePause, ExecutionOf, NewEvents, NewExecutions, NewGrants, NewVote, ResolveExecution
from .._primitives import WORKFLOW_STATES, StoreTx, TxStore
from .._records import Claim, Decided, ExecutionRecord, RunRecord
from . import _steps
from ._steps import claim, claimed, decided_meanwhile


class DecisionVerbs(TxStore):
    """`RunStore`'s verbs that record decisions, consume pauses and keep the at-most-once ledger."""

    async def record_decision(
        self, record: DecisionRecord, *, audit: Sequence[AuditEvent] = (), grant: Grant | None = None
    ) -> DecisionRecord | None:
        request_id = record.request_id

        async def work(tx: StoreTx) -> DecisionRecord | None:
            existing = await tx.decisions([request_id])
            if request_id in existing:
                return existing[request_id]
            await _steps.record(tx, [record], audit)
            if grant is not None:
                await tx.add(NewGrants([grant]))
            return None

        async def earlier(tx: StoreTx) -> DecisionRecord | None:
            found = (await tx.decisions([request_id])).get(request_id)
            if found is None:  # the clash was not over the decision (say, a grant id): nothing to return
                raise StoreError(f"request {request_id!r}: the decision could not be recorded")
            return found

        return await self._write(work, race=earlier)

    async def record_decisions(
        self,
        records: Sequence[DecisionRecord],
        *,
        audit: Sequence[AuditEvent] = (),
        grants: Sequence[Grant] = (),
    ) -> list[DecisionRecord]:
        ids = [r.request_id for r in records]

        async def earlier(tx: StoreTx) -> list[DecisionRecord]:
            existing = await tx.decisions(ids)
            return [existing[i] for i in ids if i in existing]

        async def work(tx: StoreTx) -> list[DecisionRecord]:
            taken = await earlier(tx)
            if taken:
                return taken
            await _steps.record(tx, records, audit)
            if grants:
                await tx.add(NewGrants(grants))
            return []

        async def lost(tx: StoreTx) -> list[DecisionRecord]:
            taken = await earlier(tx)
            if not taken:  # the clash was not over a decision (say, a grant id): nothing was recorded
                raise StoreError(f"requests {ids!r}: the decisions could not be recorded")
            return taken

        return await self._write(work, race=lost)

    async def add_decisions(self, records: Sequence[DecisionRecord], *, audit: Sequence[AuditEvent] = ()) -> None:
        async def work(tx: StoreTx) -> None:
            existing = await tx.decisions([r.request_id for r in records])
            await _steps.record(tx, [r for r in records if r.request_id not in existing], audit)

        await self._write(work, race=work)  # a person decided one of them meanwhile: theirs is kept

    async def consume_pause(
        self,
        run: RunRecord,
        *,
        pause_id: str,
        holder: str,
        until: float,
        now: float,
        added: Sequence[DecisionRecord],
        audit: Sequence[AuditEvent] = (),
        executing: Sequence[str] = (),
        load_history: bool = True,
        grants_of: str | None = None,
        durable: bool = True,
        load_workflow_state: bool = False,
    ) -> Claim:
        resume = ResumeClaim(executing=executing, added=added, audit=audit, grants_of=grants_of)
        Found = tuple[list[bytes] | None, list[Grant] | None, bytes | None]

        async def work(tx: StoreTx) -> Found:
            bodies, grants = await claim(
                tx, run, pause_id, resume, holder=holder, until=until, now=now, history=load_history
            )
            state = await tx.document(WORKFLOW_STATES, run.run_id) if load_workflow_state else None
            return bodies, grants, None if state is None else state.body.encode()

        async def lost(tx: StoreTx) -> Found:
            # A decision (or ledger entry) this claim adds was inserted by a concurrent writer.
            if not await tx.change(ConsumePause(pause_id)):
                raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
            raise decided_meanwhile(run.run_id)

        # Ledger marks reach the disk before their calls run, whatever the caller asked for.
        bodies, grants, state = await self._write(work, race=lost, durable=durable or bool(executing))
        found = claimed(run, pause_id, bodies, grants, holder=holder, until=until, now=now)
        return replace(found, workflow_state=state)

    async def decide_request(self, ask: DecisionAsk, *, until: float) -> Decided | None:
        request_id, holder, now = ask.request_id, ask.holder, ask.now
        Done = tuple[Decided, tuple[str, list[bytes] | None, list[Grant] | None] | None]

        async def work(tx: StoreTx) -> Done | None:
            read = await tx.deciding(request_id)
            if read is None:
                return None
            found, state = read.found, read.state
            if found.request.routing is not None:
                found = replace(found, votes=tuple(await tx.votes(request_id)))
            verdict = judge(ask, found, found.run, state, gone=holder_is_dead(found.run.lease_holder))
            if verdict.vote is not None:
                await tx.lock_audit()  # before the vote's row: the one lock order
                # Its position after the votes read: a concurrent vote took it first? judged again (`race`).
                await tx.add(NewVote(verdict.vote, seq=len(found.votes)))
                # Webhooks hear of each vote from the commit that counted it, once (a vote counted twice collides).
                await tx.add(NewEvents("request.voted", [request_id], verdict.vote.voted_at, step=len(found.votes)))
                if verdict.record is None:
                    await tx.append_audit(verdict.audit)
            if verdict.record is not None:
                await _steps.record(tx, [verdict.record], verdict.audit)
                if verdict.grant is not None:
                    await tx.add(NewGrants([verdict.grant]))
            decided = Decided(found=found, state=state, verdict=verdict, claim=None)
            if verdict.resume is None:
                return decided, None
            bodies, grants = await claim(
                tx, found.run, read.pause_id, verdict.resume, holder=holder, until=until, now=now, history=True
            )
            return decided, (read.pause_id, bodies, grants)

        async def again(tx: StoreTx) -> Done | None:
            await tx.lock_audit()  # every decider and voter writes behind it: what this reads stays so
            return await work(tx)

        try:
            # On PostgreSQL a concurrent decider (or voter) may insert first: judge again on what is there now.
            done = await self._write(work, race=again)
        except PauseConsumed:
            done = await self._write(work)  # the pause went meanwhile: the judge sees it gone and rules again
        if done is None:
            return None
        decided, taken = done
        if taken is None:
            return decided
        pause_id, bodies, grants = taken
        return replace(
            decided, claim=claimed(decided.found.run, pause_id, bodies, grants, holder=holder, until=until, now=now)
        )

    # the at-most-once ledger of approved calls

    async def begin_execution(self, request_id: str, run_id: str, now: float) -> ExecutionRecord | None:
        async def earlier(tx: StoreTx) -> ExecutionRecord | None:
            return await tx.get(ExecutionOf(request_id))

        async def work(tx: StoreTx) -> ExecutionRecord | None:
            found = await tx.get(ExecutionOf(request_id))
            if found is None:
                await tx.add(NewExecutions([request_id], run_id, now))
            return found

        return await self._write(work, race=earlier)

    async def finish_execution(
        self,
        request_id: str,
        result: bytes,
        now: float,
        *,
        audit: Sequence[AuditEvent] = (),
        status: Literal["done", "unknown"] = "done",
    ) -> None:
        async def work(tx: StoreTx) -> None:
            if await tx.change(
                ResolveExecution(request_id, result, now, status)
            ):  # once, however many sweeps race to it
                await tx.append_audit(audit)

        await self._write(work)
