"""What every HTTP endpoint delegates to: access checks, then the runtime call.

Webhook events come from the runtime itself (`Sayso.add_listener`), so a request opened, decided
or expired through REST, A2A, AG-UI or the CLI is announced the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa
from anyio.abc import TaskGroup
from sqlalchemy.exc import SQLAlchemyError

from .._core.audit import AuditProblem
from .._core.decisions import Decision
from .._core.grants import Grant
from .._core.requests import Request
from .._results import DecideResult, RunResult
from .._runtime import Sayso, new_id
from .._store import ThreadRecord
from ..exceptions import ConfigError, NotFound, RequestNotFound, StoreError
from ._access import AccessDenied, Authenticator, Principal
from ._queries import (
    AuditPage,
    InboxFilter,
    InboxPage,
    ThreadSummary,
    TranscriptEntry,
    count_audit,
    list_audit,
    list_open_requests,
    list_threads,
    transcript,
)
from ._schemas import RunIn
from ._webhooks import WebhookEmitter


class ThreadNotFound(NotFound):
    """No thread has the given id (or it belongs to someone else, which looks the same)."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        super().__init__(f"no thread has id {thread_id!r}")

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.thread_id,)


class GrantNotFound(NotFound):
    """No active grant has the given id (or it belongs to someone else, which looks the same)."""

    def __init__(self, grant_id: str) -> None:
        self.grant_id = grant_id
        super().__init__(f"no active grant has id {grant_id!r}")

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return self.__class__, (self.grant_id,)


@dataclass(frozen=True, kw_only=True)
class AuditCheck:
    """The outcome of verifying the audit chain."""

    problem: AuditProblem | None
    """The first bad record, or `None` when the chain is intact."""
    records: int


@dataclass(frozen=True, kw_only=True)
class RequestState:
    """A request, whether it still waits, and its decision if any."""

    request: Request
    status: str
    decision: Decision | None
    decided_by: str | None
    principal: str | None


@dataclass(frozen=True, kw_only=True)
class ThreadView:
    """A thread, the run in progress on it, and its history."""

    thread_id: str
    agent: str
    owner: str | None
    active_run: RunResult | None
    transcript: list[TranscriptEntry]


class Gateway:
    """The server's use of the runtime: who may do what, and which events that causes."""

    def __init__(
        self,
        sayso: Sayso,
        *,
        authenticator: Authenticator,
        emitter: WebhookEmitter,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.sayso = sayso
        self.auth = authenticator
        self.emitter = emitter
        sayso.add_listener(emitter.emit)
        self._clock = clock
        self.tasks: TaskGroup | None = None
        """Runs that outlive their HTTP request (a streamed run whose client left) run here."""

    # runs

    async def start_run(self, principal: Principal, body: RunIn) -> RunResult:
        """Send a message on a new or existing thread; only the thread's owner may."""
        if body.thread_id is not None:
            thread = await self.sayso.store.get_thread(body.thread_id)
            if thread is not None and not (principal.local or thread.owner == principal.name):
                raise AccessDenied(thread.thread_id, "only the thread's owner may send it messages")
        if body.agent is not None and body.agent not in self.sayso.config.agents:
            raise ConfigError(f"no agent named {body.agent!r}; configured: {', '.join(self.sayso.config.agents)}")
        return await self.sayso.run(
            body.message,
            agent=body.agent,
            thread_id=body.thread_id,
            principal=principal.name,
            client_tools=[t.to_client_tool() for t in body.client_tools],
        )

    async def run_result(self, principal: Principal, run_id: str) -> RunResult:
        """Where a run stands, for a principal who may see it."""
        await self._check_run(principal, run_id)
        return await self.sayso.result(run_id)

    async def resume(self, principal: Principal, run_id: str, *, force: bool) -> RunResult:
        """Resume a paused run; forced, its open requests count as skipped."""
        await self._check_run(principal, run_id)
        return await self.sayso.resume(run_id, force=force)

    # requests

    async def decide(self, principal: Principal, request_id: str, decision: Decision) -> DecideResult:
        """Decide one request; the run resumes when it was the last open one of its pause.

        Who may decide is the runtime's rule: it raises `NotAllowed` for anyone else.
        """
        return await self.sayso.decide(request_id, decision, principal=principal.name)

    async def request_state(self, principal: Principal, request_id: str) -> RequestState:
        """A request and where it stands; 404 for one the principal may not see."""
        found = await self.sayso.store.get_request(request_id)
        if found is None:
            raise RequestNotFound(request_id)
        request, pause_status, record = found
        thread = await self.sayso.store.get_thread(request.thread_id)
        if thread is None or not principal.may_act_on(owner=thread.owner, agent_path=request.agent_path):
            raise RequestNotFound(request_id)
        if record is not None:
            status = "decided"
        elif request.expires_at is not None and self._clock() >= request.expires_at:
            status = "expired"
        else:
            status = "open" if pause_status == "open" else "closed"
        return RequestState(
            request=request,
            status=status,
            decision=record.decision if record else None,
            decided_by=record.by if record else None,
            principal=record.principal if record else None,
        )

    async def inbox(self, principal: Principal, query: InboxFilter, *, limit: int, cursor: str | None) -> InboxPage:
        """Open requests across threads that the principal may decide."""
        if not principal.local:
            approved = principal.approved_agents(self.sayso.config.agents)
            if approved is not None:
                query = InboxFilter(**{**query.__dict__, "owner": principal.name, "approved_agents": approved})
        return await list_open_requests(self.sayso.store.engine, query, now=self._clock(), limit=limit, cursor=cursor)

    # grants and audit

    async def grants(self, principal: Principal) -> list[Grant]:
        """Active grants, newest first: the principal's own, or every grant for an admin."""
        return await self.sayso.grants(principal=None if principal.is_admin else principal.name)

    async def revoke_grant(self, principal: Principal, grant_id: str) -> Grant:
        """Revoke a grant of the principal's own (any grant for an admin); the next call it covered asks again."""
        if not principal.is_admin and all(g.grant_id != grant_id for g in await self.grants(principal)):
            raise GrantNotFound(grant_id)
        try:
            return await self.sayso.revoke_grant(grant_id, principal=principal.name)
        except NotFound:
            raise GrantNotFound(grant_id) from None

    async def audit(self, principal: Principal, *, newest_first: bool, limit: int, cursor: int | None) -> AuditPage:
        """A page of the audit log, for approvers."""
        self._require_approver(principal, "audit", "only approvers may read the audit log")
        return await list_audit(self.sayso.store.engine, newest_first=newest_first, limit=limit, cursor=cursor)

    async def verify_audit(self, principal: Principal) -> AuditCheck:
        """Check the audit chain, for approvers."""
        self._require_approver(principal, "audit", "only approvers may verify the audit log")
        problem = await self.sayso.verify_audit()
        return AuditCheck(problem=problem, records=await count_audit(self.sayso.store.engine))

    # expiry

    async def expire(self, principal: Principal) -> list[RunResult]:
        """Run an expiry sweep now, for approvers."""
        self._require_approver(principal, "expire", "only approvers may run expiry")
        return await self.sweep_expired()

    async def sweep_expired(self) -> list[RunResult]:
        """Close paused runs whose open requests all expired (the runtime announces `request.expired`)."""
        return await self.sayso.expire()

    # threads

    def new_thread(self, agent: str | None) -> tuple[str, str]:
        """A fresh thread id and its agent; the thread is stored when its first run starts."""
        name = agent or self.sayso.config.entry_agent
        if name not in self.sayso.config.agents:
            raise ConfigError(f"no agent named {name!r}; configured: {', '.join(self.sayso.config.agents)}")
        return new_id("thr"), name

    async def threads(self, principal: Principal, *, limit: int) -> list[ThreadSummary]:
        """The principal's threads, newest first (every thread in local mode)."""
        owner = None if principal.local else principal.name
        return await list_threads(self.sayso.store.engine, owner=owner, limit=limit)

    async def thread(self, principal: Principal, thread_id: str) -> ThreadView:
        """A thread with its history and the run in progress."""
        record = await self._visible_thread(principal, thread_id)
        active = await self.sayso.result(record.active_run_id) if record.active_run_id else None
        entries = await transcript(self.sayso.store.engine, thread_id)
        return ThreadView(
            thread_id=record.thread_id, agent=record.agent, owner=record.owner, active_run=active, transcript=entries
        )

    async def check_health(self) -> None:
        """Raise `StoreError` when the store does not answer."""
        try:
            async with self.sayso.store.engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except SQLAlchemyError as exc:
            raise StoreError(f"the store does not answer: {exc}") from exc

    # internals

    async def _visible_thread(self, principal: Principal, thread_id: str) -> ThreadRecord:
        record = await self.sayso.store.get_thread(thread_id)
        if record is None or not principal.may_act_on(owner=record.owner, agent_path=record.agent):
            raise ThreadNotFound(thread_id)
        return record

    @staticmethod
    def _require_approver(principal: Principal, subject_id: str, problem: str) -> None:
        if not principal.is_approver:
            raise AccessDenied(subject_id, problem)

    async def _check_run(self, principal: Principal, run_id: str) -> None:
        run = await self.sayso.store.get_run(run_id)
        record = await self.sayso.store.get_thread(run.thread_id)
        if record is None or not principal.may_act_on(owner=record.owner, agent_path=run.agent):
            raise AccessDenied(run_id, f"{principal.name!r} is neither the thread's owner nor an approver for it")
