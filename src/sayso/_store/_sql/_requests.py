"""SQL verbs of pauses, requests and decisions: reading them, the first decision winning, consuming a pause."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..._core.audit_events import AuditEvent
from ..._core.decisions import DecisionRecord
from ..._core.grants import Grant
from ..._core.requests import REQUEST_ADAPTER, Request
from ...exceptions import PauseConsumed, RunConflict, StoreError
from .._records import (
    Claim,
    Decided,
    Judge,
    PauseState,
    RequestState,
    RequestWithRun,
    ResumeClaim,
    RunRecord,
    RunRequests,
)
from . import _rows
from ._base import _SqlBase
from ._chain import lock_audit
from ._tx import Tx


class _Requests(_SqlBase):
    async def get_request(self, request_id: str) -> RequestState | None:
        async def work(tx: Tx) -> RequestState | None:
            row = await tx.one(_rows.GET_REQUEST, {"request_id": request_id})
            if row is None:
                return None
            return RequestState(
                request=REQUEST_ADAPTER.validate_json(row["body"]),
                pause_status=row["pause_status"],
                decision=_rows.decision_of(row),
            )

        return await self._read(work)

    async def request_with_run(self, request_id: str) -> RequestWithRun | None:
        async def work(tx: Tx) -> RequestWithRun | None:
            row = await tx.one(_rows.REQUEST_WITH_RUN, {"request_id": request_id})
            if row is None:
                return None
            return RequestWithRun(
                request=REQUEST_ADAPTER.validate_json(row["body"]),
                pause_status=row["pause_status"],
                decision=_rows.decision_of(row),
                run=_rows.run_record(row),
            )

        return await self._read(work)

    async def pause_state(self, pause_id: str) -> PauseState:
        async def work(tx: Tx) -> PauseState:
            pause = await tx.one(_rows.GET_PAUSE, {"pause_id": pause_id})
            if pause is None:
                raise StoreError(f"no pause has id {pause_id!r}")
            requests, decisions = _rows.requests_and_decisions(
                await tx.all(_rows.PAUSE_REQUESTS, {"pause_id": pause_id})
            )
            return PauseState(run_id=pause["run_id"], status=pause["status"], requests=requests, decisions=decisions)

        return await self._read(work)

    async def run_requests(self, run_id: str) -> RunRequests:
        async def work(tx: Tx) -> RunRequests:
            requests, decisions = _rows.requests_and_decisions(await tx.all(_rows.RUN_REQUESTS, {"run_id": run_id}))
            return RunRequests(requests=requests, decisions=decisions)

        return await self._read(work)

    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        async def work(tx: Tx) -> list[Request]:
            rows = await tx.all(_rows.OPEN_REQUESTS, {"limit": limit})
            return [REQUEST_ADAPTER.validate_json(r["body"]) for r in rows]

        return await self._read(work)

    async def record_decision(
        self, record: DecisionRecord, *, audit: Sequence[AuditEvent] = (), grant: Grant | None = None
    ) -> DecisionRecord | None:
        async def work(tx: Tx) -> DecisionRecord | None:
            existing = await _rows.decisions_of(tx, [record.request_id])
            if record.request_id in existing:
                return existing[record.request_id]
            await _rows.insert_decisions(tx, [record], audit)
            await _rows.insert_grants(tx, [grant] if grant is not None else [])
            return None

        async def earlier(tx: Tx) -> DecisionRecord | None:
            found = (await _rows.decisions_of(tx, [record.request_id])).get(record.request_id)
            if found is None:  # the clash was not over the decision (say, a grant id): nothing to return
                raise StoreError(f"request {record.request_id!r}: the decision could not be recorded")
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

        async def earlier(tx: Tx) -> list[DecisionRecord]:
            existing = await _rows.decisions_of(tx, ids)
            return [existing[i] for i in ids if i in existing]

        async def work(tx: Tx) -> list[DecisionRecord]:
            taken = await earlier(tx)
            if taken:
                return taken
            await _rows.insert_decisions(tx, records, audit)
            await _rows.insert_grants(tx, grants)
            return []

        async def lost(tx: Tx) -> list[DecisionRecord]:
            taken = await earlier(tx)
            if not taken:  # the clash was not over a decision (say, a grant id): nothing was recorded
                raise StoreError(f"requests {ids!r}: the decisions could not be recorded")
            return taken

        return await self._write(work, race=lost)

    async def add_decisions(self, records: Sequence[DecisionRecord], *, audit: Sequence[AuditEvent] = ()) -> None:
        async def work(tx: Tx) -> None:
            existing = await _rows.decisions_of(tx, [r.request_id for r in records])
            await _rows.insert_decisions(tx, [r for r in records if r.request_id not in existing], audit)

        await self._write(work, race=work)  # a person decided one of them meanwhile: theirs is kept

    async def consume_pause(
        self,
        run: RunRecord,
        *,
        pause_id: str,
        owner: str,
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

        async def work(tx: Tx) -> tuple[list[bytes] | None, list[Grant] | None, bytes | None]:
            bodies, grants = await _claim(
                tx, run, pause_id, resume, owner=owner, until=until, now=now, history=load_history
            )
            state = await _rows.workflow_state(tx, run.run_id) if load_workflow_state else None
            return bodies, grants, state

        async def lost(tx: Tx) -> tuple[list[bytes] | None, list[Grant] | None, bytes | None]:
            # A decision (or ledger entry) this claim adds was inserted by a concurrent writer.
            if not await _rows.consume(tx, pause_id):
                raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
            raise _decided_meanwhile(run.run_id)

        # Ledger marks reach the disk before their calls run, whatever the caller asked for.
        bodies, grants, state = await self._write(work, race=lost, durable=durable or bool(executing))
        claim = _claimed(run, pause_id, bodies, grants, owner=owner, until=until, now=now)
        return replace(claim, workflow_state=state)

    async def decide_request(
        self, request_id: str, judge: Judge, *, owner: str, until: float, now: float
    ) -> Decided | None:
        Done = tuple[Decided, tuple[str, list[bytes] | None, list[Grant] | None] | None]

        async def work(tx: Tx) -> Done | None:
            rows = await tx.all(_rows.PAUSE_OF_REQUEST, {"request_id": request_id})
            if not rows:
                return None
            requests, decisions = _rows.requests_and_decisions(rows)
            position = next(i for i, r in enumerate(requests) if r.request_id == request_id)
            row, pause_id = rows[position], rows[position]["request_pause_id"]
            found = RequestWithRun(
                request=requests[position],
                pause_status=row["pause_status"],
                decision=decisions.get(request_id),
                run=_rows.run_record(row),
            )
            state = PauseState(
                run_id=found.run.run_id, status=found.pause_status, requests=requests, decisions=decisions
            )
            verdict = judge(found, state)
            if verdict.record is not None:
                await _rows.insert_decisions(tx, [verdict.record], verdict.audit)
                await _rows.insert_grants(tx, [verdict.grant] if verdict.grant is not None else [])
            decided = Decided(found=found, state=state, verdict=verdict, claim=None)
            if verdict.resume is None:
                return decided, None
            bodies, grants = await _claim(
                tx, found.run, pause_id, verdict.resume, owner=owner, until=until, now=now, history=True
            )
            return decided, (pause_id, bodies, grants)

        try:
            # On PostgreSQL a concurrent decider may insert first: judge again on what is there now.
            done = await self._write(work, race=work)
        except PauseConsumed:
            done = await self._write(work)  # the pause went meanwhile: the judge sees it gone and rules again
        if done is None:
            return None
        decided, claimed = done
        if claimed is None:
            return decided
        pause_id, bodies, grants = claimed
        claim = _claimed(decided.found.run, pause_id, bodies, grants, owner=owner, until=until, now=now)
        return replace(decided, claim=claim)


async def _claim(
    tx: Tx, run: RunRecord, pause_id: str, resume: ResumeClaim, *, owner: str, until: float, now: float, history: bool
) -> tuple[list[bytes] | None, list[Grant] | None]:
    """Consume the pause and take the run: skips recorded, ledger marks written, history and grants read."""
    if resume.audit:
        await lock_audit(tx)
    if not await _rows.consume(tx, pause_id):
        raise PauseConsumed(run.run_id, "this pause was already resumed; a pause is consumed once")
    if resume.added and await _rows.decisions_of(tx, [d.request_id for d in resume.added]):
        raise _decided_meanwhile(run.run_id)
    await _rows.insert_decisions(tx, resume.added, resume.audit)
    if resume.executing:
        await tx.later(
            _rows.INSERT_EXECUTION, [{"request_id": r, "run_id": run.run_id, "now": now} for r in resume.executing]
        )
    params = {"run_id": run.run_id, "pause_id": pause_id, "owner": owner, "until": until, "now": now}
    await tx.later(_rows.CLAIM_RUN, [params])
    bodies = await _rows.history_bodies(tx, run.thread_id) if history else None
    return bodies, await _rows.active_grants(tx, resume.grants_of, now)


def _claimed(
    run: RunRecord,
    pause_id: str,
    bodies: list[bytes] | None,
    grants: list[Grant] | None,
    *,
    owner: str,
    until: float,
    now: float,
) -> Claim:
    """The run as `_claim` left it, with the history decoded outside the transaction."""
    return Claim(
        run=replace(
            run,
            status="running",
            resume_pause_id=pause_id,
            pause_id=None,
            lease_owner=owner,
            lease_expires_at=until,
            updated_at=now,
            revision=run.revision + 1,
        ),
        history=_rows.decode_history(bodies) if bodies is not None else None,
        grants=grants,
    )


def _decided_meanwhile(run_id: str) -> RunConflict:
    return RunConflict(run_id, "a request this resume closes was decided meanwhile; reload the pause and resume again")
