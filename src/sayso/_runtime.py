"""`Sayso`: runs agents, persists their pauses, records decisions and resumes runs from the store.

A paused run holds nothing in memory: every resume starts from what the store says, so it
works the same in a fresh process, after a restart, or on another replica. Each step that
must happen once is a conditional write in the store; this module only sequences them.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import anyio
from pydantic_ai import DeferredToolRequests
from pydantic_ai.exceptions import CallDeferred
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model

from ._agents import BuiltAgent, build_agents, build_models, open_models
from ._config import Config, load_config
from ._core.audit import AuditProblem, AuditRecord, verify_chain
from ._core.decisions import (
    DECISION_ADAPTER,
    Answer,
    Approve,
    ClientResult,
    Decision,
    DecisionRecord,
    Expire,
    check_decision,
)
from ._core.grants import Grant
from ._core.policy import may_decide
from ._core.requests import ApprovalRequest, ClientTool, DelegateRequest, QuestionRequest, Request, default_hint
from ._core.resume import SKIPPED_FOR_FORCE, SKIPPED_FOR_MESSAGE, ResumePlan, open_requests, plan_resume
from ._core.service import service_notice
from ._engine import annotate, audit_body, deferred_results, requests_from
from ._events import call_listeners
from ._failures import report_failure
from ._gate import RunDeps
from ._remote import RemoteAgents, RemoteAsk, RemoteOutcome, default_remote_agents
from ._results import DecideResult, RunResult, request_json
from ._store import RunRecord, RunStatus, RunStore
from ._tools import META_KEY, ClientToolset
from .exceptions import (
    AlreadyDecided,
    ConfigError,
    InvalidDecision,
    NotAllowed,
    NotFound,
    NotReady,
    PauseConsumed,
    RequestNotFound,
    RunConflict,
    ThreadBusy,
)

RequestEvent = Literal["request.opened", "request.decided", "request.expired"]
EventListener = Callable[[RequestEvent, dict[str, Any]], None]
"""Called with an event name and its data; see `Sayso.add_listener`."""


def new_id(prefix: str) -> str:
    """An unguessable id: 128 random bits, URL-safe, with a readable prefix."""
    return f"{prefix}_{secrets.token_urlsafe(16)}"


class Sayso:
    """The runtime: agents from a config, a durable store, and the run / decide / resume cycle.

    Use it as an async context manager so the store is opened and closed:

    ```python
    async with Sayso.from_yaml("sayso.yaml") as app:
        result = await app.run("delete notes.txt")
        if result.status == "paused":
            await app.decide(result.requests[0].request_id, Approve())
    ```
    """

    def __init__(
        self,
        config: Config,
        *,
        models: Mapping[str, Model] | None = None,
        lease_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
        remote_agents: RemoteAgents | None = None,
    ) -> None:
        """Build every agent of `config`.

        Args:
            config: the configuration (see [`load_config`][sayso.load_config]).
            models: models to use instead of the configured ones with the same name (tests pass
                scripted models here to read their call logs).
            lease_seconds: how long a running run is held by this process without a heartbeat
                before another process may carry it on.
            clock: seconds since the epoch; tests pass a fake one to move time.
            remote_agents: how remote (A2A) delegates are reached; the A2A client by default.
        """
        self.config = config
        self.store = RunStore(config.store_url(), base_dir=config.base_dir)
        built_models: dict[str, Model | str] = {**build_models(config), **(models or {})}
        self._agents = build_agents(config, built_models)
        self._open_models = AsyncExitStack()
        self._listeners: list[EventListener] = []
        self._remote_urls = _remote_delegates(config)
        self._remote = remote_agents or (default_remote_agents() if self._remote_urls else None)
        self._lease = lease_seconds
        self._clock = clock
        self._owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    @classmethod
    def from_yaml(cls, path: str | Path, **kwargs: Any) -> Sayso:
        """Load a `sayso.yaml` and build its agents."""
        return cls(load_config(path), **kwargs)

    async def __aenter__(self) -> Sayso:
        await self.store.open()
        self._open_models = await open_models(self._agents.values())
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._open_models.aclose()
        await self.store.aclose()

    # the cycle

    async def run(
        self,
        message: str,
        *,
        agent: str | None = None,
        thread_id: str | None = None,
        principal: str = "local",
        client_tools: Sequence[ClientTool] = (),
        grants: Sequence[Grant] | None = None,
    ) -> RunResult:
        """Send a user message and run the agent until it finishes or pauses.

        A message on a thread whose run is paused skips that run's open requests: the agent
        closes them and answers the new message instead.

        Args:
            message: what the person said.
            agent: which agent answers a new thread (default: the config's entry agent).
            thread_id: the thread to continue, or a new thread's id; `None` starts a new thread.
            principal: who is speaking; a new thread is owned by them.
            client_tools: tools the client runs itself; the agent sees those its `client_tools` allows.
            grants: remembered approvals kept by an external host; when given, they are honoured for
                this run and no grant is stored by sayso.

        Raises:
            ThreadBusy: the thread has a run in progress in some process.
        """
        now = self._clock()
        thread = await self.store.get_thread(thread_id) if thread_id else None
        if thread is not None and agent is not None and agent != thread.agent:
            raise ConfigError(f"thread {thread.thread_id!r} belongs to agent {thread.agent!r}, not {agent!r}")
        built = self._built(thread.agent if thread else agent or self.config.entry_agent)
        requests: list[Request] = []
        decisions: dict[str, DecisionRecord] = {}
        added: list[DecisionRecord] = []
        supersede: str | None = None
        if thread is not None and thread.active_run_id is not None:
            active = await self.store.get_run(thread.active_run_id)
            if active.status != "paused" or active.pause_id is None:
                raise ThreadBusy(active.run_id, f"thread {thread.thread_id!r} already has a run in progress")
            _, _, requests, decided = await self.store.pause_state(active.pause_id)
            plan = plan_resume(active.run_id, requests, decided, force=True, now=now, skip_reason=SKIPPED_FOR_MESSAGE)
            decisions, added, supersede = plan.decisions, plan.added, active.pause_id
            for request in open_requests(requests, decided):
                if isinstance(request, DelegateRequest):
                    await self._cancel_tree(request.child_run_id, SKIPPED_FOR_MESSAGE)
        run = await self.store.start_run(
            thread_id=thread.thread_id if thread else thread_id or new_id("thr"),
            owner=principal,
            agent=built.name,
            run_id=new_id("run"),
            prompt=message,
            client_tools=client_tools,
            lease_owner=self._owner,
            lease_expires_at=now + self._lease,
            now=now,
            expect_active=thread.active_run_id if thread else None,
            skips=added,
            audit=[audit_body(r, d) for r in requests for d in added if d.request_id == r.request_id],
            supersede_pause=supersede,
        )
        self._emit_decided(requests, added)
        await self._tell_services(built, requests, decisions)
        return await self._execute(
            built,
            run,
            prompt=message,
            requests=requests,
            decisions=decisions,
            external_grants=grants,
            history=None if thread is not None else [],
        )

    async def decide(
        self, request_id: str, decision: Decision, *, principal: str = "local", resume: bool = True
    ) -> DecideResult:
        """Record a decision; when it was the last open request of the pause, resume the run.

        Repeating the decision already taken is a harmless no-op; a different second decision
        is refused, and a refused decision changes nothing.

        Raises:
            RequestNotFound: no request has this id.
            InvalidDecision: the decision does not fit the request; it stays open.
            AlreadyDecided: a different decision was taken first.
            RequestExpired: the request expired.
        """
        found = await self.store.request_with_run(request_id)
        if found is None:
            raise RequestNotFound(request_id)
        request, pause_status, existing, asking_run = found
        self._check_allowed(request, principal)
        now = self._clock()
        to_record = check_decision(request, decision, existing=existing, now=now)
        recorded = False
        if to_record is not None:
            if pause_status != "open":
                raise AlreadyDecided(request_id, "its pause was already resumed or closed")
            self._check_same_subject(request, to_record)
            record = DecisionRecord(
                request_id=request_id, decision=to_record, by="person", principal=principal, decided_at=now
            )
            earlier = await self.store.record_decision(
                record, audit=[audit_body(request, record)], grant=self._grant_from(request, to_record, now)
            )
            if earlier is not None and earlier.decision != to_record:
                raise AlreadyDecided(request_id, f"already decided ({earlier.decision.kind}); the first decision wins")
            recorded = earlier is None
            if recorded:
                self._emit_decided([request], [record])
        root = asking_run if asking_run.parent_run_id is None else await self._root(asking_run.run_id)
        state = await self.store.pause_state(root.pause_id) if resume and root.pause_id else None
        if state is not None and root.status == "paused" and not await self._leaves_in(state[2], state[3]):
            try:
                resumed = await self._advance(root, force=False, state=state)
            except PauseConsumed:
                resumed = await self.result(root.run_id)  # another decider's resume carries the run on
            return DecideResult(request_id=request_id, recorded=recorded, run=resumed)
        return DecideResult(request_id=request_id, recorded=recorded, run=await self.result(root.run_id))

    async def resume(self, run_id: str, *, force: bool = False) -> RunResult:
        """Resume a paused run, or carry on a run whose process died.

        Args:
            run_id: the run.
            force: resume even if requests are open; they count as skipped.

        Raises:
            NotReady: requests are open and `force` is false.
            PauseConsumed: another process resumed this pause first.
            RunConflict: the run is finished, or is being carried on by a live process.
        """
        run = await self.store.get_run(run_id)
        if run.status == "paused" and run.pause_id is not None:
            waiting = await self._open_leaves(run)
            if waiting and not force:
                ids = ", ".join(r.request_id for r in waiting)
                raise NotReady(run_id, f"{len(waiting)} request(s) still open ({ids}); decide them or force the resume")
            return await self._advance(run, force=force)
        if run.status == "running":
            return await self._carry_on(run)
        raise RunConflict(run_id, f"the run is {run.status}; only a paused run can be resumed")

    async def result(self, run_id: str) -> RunResult:
        """Where a run stands now, with the requests it still waits on."""
        run = await self.store.get_run(run_id)
        waiting = await self._open_leaves(run) if run.status == "paused" else []
        return RunResult(
            run_id=run.run_id,
            thread_id=run.thread_id,
            agent=run.agent,
            status=run.status,
            output=run.output,
            requests=tuple(waiting),
            error=run.error,
        )

    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        """Every open request across threads, oldest first."""
        return await self.store.open_requests(limit=limit)

    async def expire(self) -> list[RunResult]:
        """Close every paused run whose open requests have all expired; each agent answers with what it knows."""
        now = self._clock()
        results: list[RunResult] = []
        for run_id in await self.store.expired_runs(now):
            run = await self.store.get_run(run_id)
            if run.status != "paused" or run.pause_id is None:
                continue
            _, _, requests, decided = await self.store.pause_state(run.pause_id)
            waiting = open_requests(requests, decided)
            if not waiting or any(r.expires_at is None or r.expires_at > now for r in waiting):
                continue
            expired = [
                DecisionRecord(
                    request_id=r.request_id,
                    decision=Expire(expires_at=r.expires_at or now),
                    by="expiry",
                    principal=None,
                    decided_at=now,
                )
                for r in waiting
            ]
            by_id = {r.request_id: r for r in waiting}
            await self.store.add_decisions(expired, audit=[audit_body(by_id[d.request_id], d) for d in expired])
            self._emit_decided(waiting, expired)
            root = await self._root(run.run_id)
            if await self._open_leaves(root):
                continue
            try:
                results.append(await self._advance(root, force=False))
            except PauseConsumed:
                continue
        return results

    async def grants(self, *, principal: str | None = None) -> list[Grant]:
        """Active remembered approvals, newest first."""
        return await self.store.list_grants(principal=principal)

    async def revoke_grant(self, grant_id: str, *, principal: str = "local") -> Grant:
        """Revoke a remembered approval; the next call it covered asks again.

        Raises:
            NotFound: no active grant has this id.
        """
        now = self._clock()
        revoked = await self.store.revoke_grant(
            grant_id,
            now=now,
            audit=[{"event": "grant_revoked", "grant_id": grant_id, "principal": principal, "at": now}],
        )
        if revoked is None:
            raise NotFound(f"no active grant has id {grant_id!r}")
        return revoked

    async def audit_log(self) -> list[AuditRecord]:
        """Every audit record, oldest first."""
        return await self.store.audit_records()

    async def verify_audit(self) -> AuditProblem | None:
        """Check the audit chain; returns the first bad record, or `None` when intact."""
        return verify_chain(await self.store.audit_records())

    def add_listener(self, listener: EventListener) -> None:
        """Call `listener(event, data)` on `request.opened`, `request.decided` and `request.expired`.

        Events come from every interface alike (Python, REST, A2A, AG-UI, the CLI); `data` holds the
        request as `request_json` shows it, and for decisions the decision, who took it and the principal.
        A listener must not block: the server's webhook sender only queues.
        """
        self._listeners.append(listener)

    def _emit_opened(self, requests: Sequence[Request]) -> None:
        for request in requests:
            if not isinstance(request, DelegateRequest):
                call_listeners(self._listeners, "request.opened", {"request": request_json(request)})

    def _emit_decided(self, requests: Sequence[Request], records: Sequence[DecisionRecord]) -> None:
        by_id = {r.request_id: r for r in requests}
        for record in records:
            request = by_id.get(record.request_id)
            if request is None or isinstance(request, DelegateRequest):
                continue
            data: dict[str, Any] = {"request": request_json(request)}
            event: RequestEvent
            if isinstance(record.decision, Expire):
                event = "request.expired"
            else:
                event = "request.decided"
                data["decision"] = DECISION_ADAPTER.dump_python(record.decision, mode="json")
                data["by"] = record.by
                data["principal"] = record.principal
            call_listeners(self._listeners, event, data)

    def agent_model(self, agent: str) -> Model | str:
        """The model an agent runs on (a scripted model's `calls` log the requests it answered)."""
        return self._built(agent).model

    # internals

    def _built(self, name: str) -> BuiltAgent:
        try:
            return self._agents[name]
        except KeyError:
            raise ConfigError(f"no agent named {name!r}; configured: {', '.join(self._agents)}") from None

    async def _advance(
        self,
        run: RunRecord,
        *,
        force: bool,
        state: tuple[str, str, list[Request], dict[str, DecisionRecord]] | None = None,
    ) -> RunResult:
        """Carry a paused run on as far as its decisions allow, delegates first.

        Each delegate waiting below is advanced first; one that finishes answers its parent's call.
        A run resumes only when every call it waits on is answered (or `force` skips the rest);
        a delegate that paused again keeps its parent paused, without a model call.
        """
        assert run.pause_id is not None
        if run.parent_run_id is not None and run.agent in self._remote_urls:
            return await self._advance_remote(run, force=force)
        _, _, requests, decided = state or await self.store.pause_state(run.pause_id)
        decided = dict(decided)
        for request in open_requests(requests, decided):
            if isinstance(request, DelegateRequest):
                answer = await self._delegate_progress(request, force=force)
                if answer is not None:
                    decided[request.request_id] = answer
        if open_requests(requests, decided) and not force:
            return await self.result(run.run_id)
        now = self._clock()
        plan = plan_resume(run.run_id, requests, decided, force=force, now=now)
        for skipped in plan.added:
            request = next(r for r in requests if r.request_id == skipped.request_id)
            if isinstance(request, DelegateRequest):
                await self._cancel_tree(request.child_run_id, SKIPPED_FOR_FORCE)
        approved = [
            r.request_id
            for r in requests
            if isinstance(r, ApprovalRequest) and isinstance(plan.decisions[r.request_id].decision, Approve)
        ]
        run, history = await self._consume(run, requests, plan, now=now, executing=approved, load_history=True)
        built = self._built(run.agent)
        await self._tell_services(built, requests, plan.decisions)
        return await self._execute(
            built,
            run,
            prompt=None,
            requests=requests,
            decisions=plan.decisions,
            marked=frozenset(approved),
            history=history,
        )

    async def _consume(
        self,
        run: RunRecord,
        requests: Sequence[Request],
        plan: ResumePlan,
        *,
        now: float,
        executing: Sequence[str],
        load_history: bool,
    ) -> tuple[RunRecord, list[ModelMessage] | None]:
        """Consume a run's pause for this process, recording and announcing the skips the resume adds."""
        assert run.pause_id is not None
        by_id = {r.request_id: r for r in requests}
        claimed = await self.store.consume_pause(
            run,
            pause_id=run.pause_id,
            owner=self._owner,
            until=now + self._lease,
            now=now,
            added=plan.added,
            audit=[audit_body(by_id[d.request_id], d) for d in plan.added],
            executing=executing,
            load_history=load_history,
        )
        self._emit_decided(requests, plan.added)
        return claimed

    async def _delegate_progress(self, request: DelegateRequest, *, force: bool) -> DecisionRecord | None:
        """Advance a delegate's run; once it has finished, record its answer on the parent's call."""
        child = await self.store.get_run(request.child_run_id)
        if child.status == "paused":
            if await self._open_leaves(child) and not force:
                return None
            try:
                outcome = await self._advance(child, force=force)
            except PauseConsumed:
                return None
            if outcome.status in ("paused", "running"):
                return None
        else:
            outcome = await self.result(child.run_id)
        if outcome.status == "running":
            return None
        record = DecisionRecord(
            request_id=request.request_id,
            decision=ClientResult(value=await self._delegate_answer(outcome)),
            by="system",
            principal=None,
            decided_at=self._clock(),
        )
        await self.store.add_decisions([record])
        return record

    async def _delegate(self, parent: RunRecord, target: str, task: str, call_id: str) -> str:
        """Run a delegate for a parent's tool call; if it pauses, the parent's call waits on it."""
        if target in self._remote_urls:
            return await self._delegate_remote(parent, target, task, call_id)
        child = await self._start_child(parent, target, task, call_id, client_tools=parent.client_tools)
        outcome = await self._execute(self._built(target), child, prompt=task, requests=[], decisions={}, history=[])
        if outcome.status == "paused":
            raise CallDeferred(metadata={META_KEY: {"kind": "delegate", "child_run_id": child.run_id}})
        return await self._delegate_answer(outcome)

    async def _delegate_remote(self, parent: RunRecord, target: str, task: str, call_id: str) -> str:
        """Hand work to a remote A2A agent; its pause becomes a proxy run whose requests mirror the remote's."""
        assert self._remote is not None
        proxy = await self._start_child(parent, target, task, call_id, client_tools=())
        url = self._remote_urls[target]
        outcome = await self._remote.start(url, task)
        result = await self._settle_remote(proxy, url, outcome)
        if result.status == "paused":
            raise CallDeferred(metadata={META_KEY: {"kind": "delegate", "child_run_id": proxy.run_id}})
        return await self._delegate_answer(result)

    async def _start_child(
        self, parent: RunRecord, target: str, task: str, call_id: str, *, client_tools: Sequence[ClientTool]
    ) -> RunRecord:
        """A delegate's run on a thread of its own, tied to the parent's call that handed it the work."""
        now = self._clock()
        return await self.store.start_run(
            thread_id=new_id("thr"),
            owner=parent.principal or "local",
            agent=target,
            run_id=new_id("run"),
            prompt=task,
            client_tools=client_tools,
            lease_owner=self._owner,
            lease_expires_at=now + self._lease,
            now=now,
            expect_active=None,
            parent_run_id=parent.run_id,
            parent_call_id=call_id,
            agent_path=f"{parent.path}/{target}",
        )

    async def _advance_remote(self, proxy: RunRecord, *, force: bool) -> RunResult:
        """Send the person's decisions down to the remote task and mirror where it stands now."""
        assert proxy.pause_id is not None and self._remote is not None
        remote = await self.store.remote_task(proxy.run_id)
        assert remote is not None, "a proxy run always has its remote task"
        url, task_id, context_id = remote
        _, _, requests, decided = await self.store.pause_state(proxy.pause_id)
        if open_requests(requests, decided) and not force:
            return await self.result(proxy.run_id)
        now = self._clock()
        plan = plan_resume(proxy.run_id, requests, decided, force=force, now=now)
        proxy, _ = await self._consume(proxy, requests, plan, now=now, executing=(), load_history=False)
        decisions = [(_ask_of(r), plan.decisions[r.request_id].decision) for r in requests]
        outcome = await self._remote.answer(url, task_id=task_id, context_id=context_id, decisions=decisions)
        return await self._settle_remote(proxy, url, outcome)

    async def _settle_remote(self, proxy: RunRecord, url: str, outcome: RemoteOutcome) -> RunResult:
        """Record a remote task's state on its proxy run: finished, or paused on mirrored requests."""
        now = self._clock()
        await self.store.set_remote_task(proxy.run_id, url=url, task_id=outcome.task_id, context_id=outcome.context_id)
        if outcome.status != "paused":
            status: RunStatus = "completed" if outcome.status == "completed" else "failed"
            output, error = (outcome.text, None) if status == "completed" else (None, outcome.text)
            await self.store.finish_run(
                proxy, owner=self._owner, new_messages=(), status=status, output=output, error=error, now=now
            )
            return RunResult(
                run_id=proxy.run_id,
                thread_id=proxy.thread_id,
                agent=proxy.agent,
                status=status,
                output=output,
                error=error,
            )
        mirrored = [_mirror(ask, proxy, url, now=now) for ask in outcome.asks]
        await self.store.save_pause(
            proxy, owner=self._owner, pause_id=new_id("pau"), new_messages=(), requests=mirrored, now=now
        )
        self._emit_opened(mirrored)
        return RunResult(
            run_id=proxy.run_id, thread_id=proxy.thread_id, agent=proxy.agent, status="paused", requests=tuple(mirrored)
        )

    async def _delegate_answer(self, outcome: RunResult) -> str:
        """What the parent reads from a finished delegate: its answer, plus what it asked the person (§5)."""
        if outcome.status != "completed":
            return f"Error: the delegate {outcome.agent} {outcome.status}: {outcome.error or 'no answer'}"
        asked, decided = await self.store.run_requests(outcome.run_id)
        notes = [
            f"{q.question!r} → {', '.join(a for a in answer if a.strip())}"
            for r in asked
            if isinstance(r, QuestionRequest)
            and (record := decided.get(r.request_id)) is not None
            and isinstance(record.decision, Answer)
            for q, answer in zip(r.questions, record.decision.answers, strict=True)
        ]
        if not notes:
            return outcome.output or ""
        return f"{outcome.output or ''}\n\n(Note: {outcome.agent} asked the person {'; '.join(notes)}.)"

    async def _root(self, run_id: str) -> RunRecord:
        """The top-level run a (delegate) run belongs to."""
        run = await self.store.get_run(run_id)
        while run.parent_run_id is not None:
            run = await self.store.get_run(run.parent_run_id)
        return run

    async def _open_leaves(self, run: RunRecord) -> list[Request]:
        """The requests a person can answer anywhere below a paused run, delegates included."""
        if run.status != "paused" or run.pause_id is None:
            return []
        _, _, requests, decided = await self.store.pause_state(run.pause_id)
        return await self._leaves_in(requests, decided)

    async def _leaves_in(self, requests: Sequence[Request], decided: Mapping[str, DecisionRecord]) -> list[Request]:
        """The open leaves of one pause's requests, following delegates down."""
        leaves: list[Request] = []
        for request in open_requests(requests, decided):
            if isinstance(request, DelegateRequest):
                leaves.extend(await self._open_leaves(await self.store.get_run(request.child_run_id)))
            else:
                leaves.append(request)
        return leaves

    async def _cancel_tree(self, run_id: str, reason: str) -> None:
        """Close a paused delegate and everything below it: every open request there is skipped."""
        run = await self.store.get_run(run_id)
        if run.status != "paused" or run.pause_id is None:
            return
        _, _, requests, decided = await self.store.pause_state(run.pause_id)
        skips = plan_resume(run.run_id, requests, decided, force=True, now=self._clock(), skip_reason=reason).added
        for request in open_requests(requests, decided):
            if isinstance(request, DelegateRequest):
                await self._cancel_tree(request.child_run_id, reason)
        by_id = {r.request_id: r for r in requests}
        await self.store.cancel_run(
            run, now=self._clock(), skips=skips, audit=[audit_body(by_id[d.request_id], d) for d in skips]
        )
        self._emit_decided(requests, skips)

    async def _carry_on(self, run: RunRecord) -> RunResult:
        """Take over a run whose process died, and redo its last segment from the store."""
        now = self._clock()
        dead = [run.lease_owner] if run.lease_owner and _owner_is_dead(run.lease_owner) else []
        if not await self.store.take_over(
            run.run_id, owner=self._owner, until=now + self._lease, now=now, dead_owners=dead
        ):
            raise RunConflict(
                run.run_id, "another live process is carrying this run on; wait for it to pause or finish"
            )
        run = await self.store.get_run(run.run_id)
        built = self._built(run.agent)
        if run.resume_pause_id is None:
            return await self._execute(built, run, prompt=run.prompt, requests=[], decisions={})
        pause_run_id, _, requests, decided = await self.store.pause_state(run.resume_pause_id)
        # The run's own pause: its prompt is already in history. A pause of the run this one
        # superseded: the new message still has to be sent.
        prompt = None if pause_run_id == run.run_id else run.prompt
        return await self._execute(built, run, prompt=prompt, requests=requests, decisions=decided)

    async def _execute(
        self,
        built: BuiltAgent,
        run: RunRecord,
        *,
        prompt: str | None,
        requests: Sequence[Request],
        decisions: Mapping[str, DecisionRecord],
        external_grants: Sequence[Grant] | None = None,
        marked: frozenset[str] = frozenset(),
        history: list[ModelMessage] | None = None,
    ) -> RunResult:
        if history is None:
            history = await self.store.load_messages(run.thread_id)
        deps = RunDeps(
            run_id=run.run_id,
            thread_id=run.thread_id,
            agent_path=run.path,
            principal=run.principal,
            ledger=self.store,
            clock=self._clock,
            grants=external_grants,
            delegate=lambda target, task, call_id: self._delegate(run, target, task, call_id),
            marked=marked,
        )
        allowed = [t for t in run.client_tools if t.name in built.client_tools]
        # A client tool's context reaches only the agents allowed to call that tool.
        context = "\n".join(
            f"Context from the client for the tool {t.name!r}: {t.context}" for t in allowed if t.context
        )
        try:
            async with self._holding(run):
                result = await built.agent.run(
                    prompt,
                    message_history=history,
                    deferred_tool_results=deferred_results(requests, decisions) if requests else None,
                    deps=deps,
                    toolsets=[ClientToolset(allowed)] if allowed else None,
                    instructions=context or None,
                )
        except Exception as exc:
            # The boundary of a run: whatever the model or a tool raised, the run is recorded as
            # failed (its pause is already consumed), and the caller gets a result saying why.
            error = report_failure(run.run_id, exc)
            await self.store.finish_run(
                run,
                owner=self._owner,
                new_messages=(),
                status="failed",
                output=None,
                error=error,
                now=self._clock(),
                executions=deps.executed,
            )
            return RunResult(run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="failed", error=error)
        new = annotate(result.new_messages(), requests, decisions)
        now = self._clock()
        output = result.output
        if isinstance(output, DeferredToolRequests):
            raised = requests_from(
                output,
                result.all_messages(),
                run_id=run.run_id,
                thread_id=run.thread_id,
                agent_path=run.path,
                now=now,
                new_id=lambda: new_id("req"),
                principal=run.principal,
                redact=built.redact,
                parent_call_id=run.parent_call_id,
            )
            await self.store.save_pause(
                run,
                owner=self._owner,
                pause_id=new_id("pau"),
                new_messages=new,
                requests=raised,
                now=now,
                executions=deps.executed,
            )
            self._emit_opened(raised)
            return RunResult(
                run_id=run.run_id,
                thread_id=run.thread_id,
                agent=run.agent,
                status="paused",
                requests=tuple(await self._leaves_in(raised, {})),
            )
        await self.store.finish_run(
            run,
            owner=self._owner,
            new_messages=new,
            status="completed",
            output=output,
            error=None,
            now=now,
            executions=deps.executed,
        )
        return RunResult(run_id=run.run_id, thread_id=run.thread_id, agent=run.agent, status="completed", output=output)

    async def _tell_services(
        self, built: BuiltAgent, requests: Sequence[Request], decisions: Mapping[str, DecisionRecord]
    ) -> None:
        """Tell each service how its own approval request was decided, before the run continues (§2.4)."""
        notices = [
            service_notice(
                r, decisions[r.request_id].decision, principal=decisions[r.request_id].principal, at=self._clock()
            )
            for r in requests
            if isinstance(r, ApprovalRequest) and r.service_request is not None and r.request_id in decisions
        ]
        if not notices or not built.notifier.configured:
            return
        audit = []
        for notice in notices:
            problem = await built.notifier.notify(notice)
            audit.append({"event": "service_notified", **notice, "delivered": problem is None, "problem": problem})
        await self.store.append_audit(audit)

    def _check_allowed(self, request: Request, principal: str) -> None:
        """Only the thread's owner or an approver for the agent decides (§7)."""
        root_agent = request.agent_path.split("/")[0]
        approver_for = [p for c in self.config.principals if c.name == principal for p in c.approver_for]
        if not may_decide(principal, owner=request.principal, agent=root_agent, approver_for=approver_for):
            raise NotAllowed(request.request_id, f"{principal!r} may not decide requests of this thread")

    def _check_same_subject(self, request: Request, decision: Decision) -> None:
        """An edit must keep the subject the person saw: a remembered decision never reaches further."""
        if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve):
            return
        if decision.edited_args is not None and isinstance(request.payload, dict) and "remote_agent" in request.payload:
            raise InvalidDecision(
                request.request_id, "a remote agent's call cannot be edited from here (kagent's HITL has no edits)"
            )
        if decision.edited_args is None or request.subject is None or request.service_request is not None:
            return
        gate = self._built(request.agent_path.split("/")[-1]).gate
        subject = gate.subject_for(request.tool_name, decision.edited_args)
        if subject is None or subject.key != request.subject.key:
            shown = subject.label if subject else "no approval at all"
            raise InvalidDecision(
                request.request_id, f"the edit changes what the approval covers ({request.subject.label} → {shown})"
            )

    def _grant_from(self, request: Request, decision: Decision, now: float) -> Grant | None:
        """The grant an approval with a wider scope creates; none for service-enforced requests."""
        if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve) or decision.scope == "once":
            return None
        if request.service_request is not None or request.subject is None:
            return None
        return Grant(
            grant_id=new_id("grt"),
            tool=request.tool_name,
            subject_key=request.subject.key,
            subject_label=request.subject.label,
            scope=decision.scope,
            principal=request.principal or "",
            thread_id=request.thread_id if decision.scope == "thread" else None,
            created_at=now,
        )

    @asynccontextmanager
    async def _holding(self, run: RunRecord) -> AsyncIterator[None]:
        """Keep this process's lease on the run alive while it works."""

        async def heartbeat() -> None:
            while True:
                await anyio.sleep(self._lease / 3)
                await self.store.renew_lease(run.run_id, self._owner, self._clock() + self._lease)

        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()


def _remote_delegates(config: Config) -> dict[str, str]:
    """Remote delegates by tool name; one name stands for one URL across the config."""
    urls: dict[str, str] = {}
    for agent, spec in config.agents.items():
        for delegate in spec.delegates:
            if delegate.a2a is None:
                continue
            name = delegate.tool_name
            if name in config.agents or urls.get(name, delegate.a2a) != delegate.a2a:
                raise ConfigError(f"agent {agent!r}: the remote delegate name {name!r} is already taken; set 'name'")
            urls[name] = delegate.a2a
    return urls


def _mirror(ask: RemoteAsk, proxy: RunRecord, url: str, *, now: float) -> Request:
    """A sayso request standing for what the remote task waits on (the remote's id as the call id)."""
    common: dict[str, Any] = {
        "request_id": new_id("req"),
        "run_id": proxy.run_id,
        "thread_id": proxy.thread_id,
        "agent_path": proxy.path,
        "tool_call_id": ask.ask_id,
        "tool_name": ask.tool_name,
        "args": dict(ask.args),
        "created_at": now,
        "principal": proxy.principal,
        "parent_call_id": proxy.parent_call_id,
    }
    if ask.kind == "question":
        return QuestionRequest(**common, questions=ask.questions)
    return ApprovalRequest(
        **common, hint=ask.hint or default_hint(ask.tool_name), payload={"remote_agent": url}, scopes=("once",)
    )


def _ask_of(request: Request) -> RemoteAsk:
    """The remote ask a mirrored request stands for."""
    if isinstance(request, QuestionRequest):
        return RemoteAsk(
            kind="question", ask_id=request.tool_call_id, tool_name="ask_user", questions=request.questions
        )
    return RemoteAsk(kind="approval", ask_id=request.tool_call_id, tool_name=request.tool_name, args=request.args)


def _owner_is_dead(owner: str) -> bool:
    """Whether a lease owner on this host is a process that no longer exists."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
