"""`Sayso`: the runtime's public verbs, the one door every interface goes through.

Each verb resolves the caller to a `Principal`, applies the one access rule of
`sayso._core.access`, and hands the work to the part of the runtime that owns it (`_turns`,
`_deciding`, `_tree`, `_leases`); reading verbs go straight to the store port. REST, A2A,
AG-UI, the web UI and the CLI call only these methods.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model

from .._agents import build_agents, build_models, open_models
from .._checks import known_tool_names
from .._config import Config, load_config
from .._core import access
from .._core.access import LOCAL, Principal
from .._core.audit import AuditProblem, AuditRecord, verify_chain
from .._core.decisions import Decision
from .._core.grants import Grant
from .._core.policy import InterruptPolicy
from .._core.requests import ClientTool
from .._hooks import BeforeToolCall, HookToolset, before_tool_call
from .._results import DecideResult, RunResult
from .._store import (
    AuditPage,
    InboxFilter,
    InboxPage,
    RequestState,
    RunRecord,
    RunStore,
    ThreadRecord,
    ThreadSummary,
    TranscriptEntry,
    store_from_url,
)
from ..exceptions import (
    ConfigError,
    GrantNotFound,
    NotAllowed,
    RequestNotFound,
    RunNotFound,
    ThreadNotFound,
    UsageError,
)
from . import _deciding, _live, _tree, _turns
from ._events import EventListener
from ._kernel import Kernel
from ._remote import RemoteAgents, remote_delegates

PrincipalLike = Principal | str
"""A caller: a `Principal`, or a name resolved against the configured principals."""

DEFAULT_REMOTE_AGENTS: list[Callable[[], RemoteAgents]] = []
"""How remote delegates are reached when the caller passes no client; the package root adds the A2A client."""


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
        store: RunStore | None = None,
        models: Mapping[str, Model] | None = None,
        lease_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
        remote_agents: RemoteAgents | None = None,
    ) -> None:
        """Build every agent of `config`.

        Args:
            config: the configuration (see [`load_config`][sayso.load_config]).
            store: where runs, pauses and decisions live; by default the config's `store` URL.
            models: models to use instead of the configured ones with the same name (tests pass
                scripted models here to read their call logs).
            lease_seconds: how long a running run is held by this process without a heartbeat
                before another process may carry it on.
            clock: seconds since the epoch; tests pass a fake one to move time.
            remote_agents: how remote (A2A) delegates are reached; the A2A client by default.
        """
        self.config = config
        built_models: dict[str, Model | str] = {**build_models(config), **(models or {})}
        urls = remote_delegates(config)
        if remote_agents is None and urls and DEFAULT_REMOTE_AGENTS:
            remote_agents = DEFAULT_REMOTE_AGENTS[-1]()
        if urls and remote_agents is None:
            raise ConfigError("remote delegates are configured but no A2A client is available; pass remote_agents")
        self._k = Kernel(
            config=config,
            store=store or store_from_url(config.store_url(), base_dir=config.base_dir),
            agents=build_agents(config, built_models),
            clock=clock,
            lease_seconds=lease_seconds,
            remote_urls=urls,
            remote=remote_agents,
        )
        self._open = False
        self._models = AsyncExitStack()
        self._mcp = AsyncExitStack()

    @classmethod
    def from_yaml(cls, path: str | Path, **kwargs: Any) -> Sayso:
        """Load a `sayso.yaml` and build its agents."""
        return cls(load_config(path), **kwargs)

    @property
    def store(self) -> RunStore:
        """The store port this runtime writes to (for embedding and tests; interfaces use the verbs)."""
        return self._k.store

    async def __aenter__(self) -> Sayso:
        await self._k.store.open()
        self._models = await open_models(self._k.agents.values())
        self._mcp = await _live.open_mcp_host(self._k)
        self._open = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open = False
        try:
            await self._mcp.aclose()
            await self._models.aclose()
        finally:
            await self._k.store.aclose()

    def principal(self, who: PrincipalLike) -> Principal:
        """The principal a name stands for: its configured approver role, or the local caller in local mode."""
        if isinstance(who, Principal):
            return who
        if not self.config.principals:
            return LOCAL if who == access.LOCAL_NAME else Principal(name=who)
        for configured in self.config.principals:
            if configured.name == who:
                return Principal(name=who, approver_for=tuple(configured.approver_for))
        return Principal(name=who)

    # the cycle

    async def run(
        self,
        message: str,
        *,
        agent: str | None = None,
        thread_id: str | None = None,
        principal: PrincipalLike = access.LOCAL_NAME,
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
            principal: who is speaking; a new thread is owned by them, and only they speak in it.
            client_tools: tools the client runs itself; the agent sees those its `client_tools` allows.
            grants: remembered approvals kept by an external host; when given, they are honoured for
                this run and no grant is stored by sayso.

        Raises:
            ThreadBusy: the thread has a run in progress in some process.
            NotAllowed: the thread belongs to someone else.
        """
        self._check_open()
        return await _turns.start(
            self._k,
            message,
            agent=agent,
            thread_id=thread_id,
            principal=self.principal(principal),
            client_tools=client_tools,
            grants=grants,
        )

    async def decide(
        self, request_id: str, decision: Decision, *, principal: PrincipalLike = access.LOCAL_NAME, resume: bool = True
    ) -> DecideResult:
        """Record a decision; when it was the last open request of the pause, resume the run.

        Repeating the decision already taken is a harmless no-op; a different second decision
        is refused, and a refused decision changes nothing.

        Raises:
            RequestNotFound: no request has this id.
            NotAllowed: the principal is neither the thread's owner nor an approver for its agent.
            InvalidDecision: the decision does not fit the request; it stays open.
            AlreadyDecided: a different decision was taken first.
            RequestExpired: the request expired.
        """
        self._check_open()
        return await _deciding.decide(self._k, request_id, decision, principal=self.principal(principal), resume=resume)

    async def answer_pause(
        self,
        run_id: str,
        answers: Mapping[str, Decision],
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        rest: Literal["wait", "skip"] = "wait",
    ) -> RunResult:
        """Answer several open requests of a paused run at once, then resume it when nothing is left open.

        Every answer is checked before any is recorded (one refused answer records none); they are
        recorded in one transaction. Requests left out wait (`rest="wait"`) or count as skipped and
        the run resumes now (`rest="skip"`).

        Raises:
            RequestNotFound: an answer names a request that is not this run's.
            DecisionRefused: an answer does not fit its request, or was decided differently first.
            RunConflict: the run is not paused.
        """
        self._check_open()
        return await _deciding.answer_pause(self._k, run_id, answers, principal=self.principal(principal), rest=rest)

    async def resume(self, run_id: str, *, force: bool = False, principal: PrincipalLike | None = None) -> RunResult:
        """Resume a paused run, or carry on a run whose process died.

        Args:
            run_id: the run.
            force: resume even if requests are open; they count as skipped.
            principal: who asks; checked like a decision when given.

        Raises:
            NotReady: requests are open and `force` is false.
            PauseConsumed: another process resumed this pause first.
            RunConflict: the run is finished, or is being carried on by a live process.
        """
        self._check_open()
        run = await self.run_record(run_id, principal=principal)
        return await _turns.resume(self._k, run, force=force)

    async def cancel(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunResult:
        """Cancel a paused run: its open requests (delegates' too) close as skipped and nothing runs.

        Raises:
            RunConflict: the run is not paused.
        """
        self._check_open()
        return await _turns.cancel(self._k, await self.run_record(run_id, principal=principal))

    async def result(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunResult:
        """Where a run stands now, with the requests it still waits on."""
        await self.run_record(run_id, principal=principal)
        return await _tree.result(self._k, run_id)

    async def expire(self, *, principal: PrincipalLike | None = None) -> list[RunResult]:
        """Close every paused run whose open requests have all expired; each agent answers with what it knows.

        Args:
            principal: who asks: approvers only; `None` (Python, the server's own sweep) skips the check.
        """
        self._check_open()
        if principal is not None:
            self._require_approver(principal, "expire", "only approvers may run expiry")
        return await _deciding.expire(self._k)

    # reading

    async def run_record(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunRecord:
        """A run's stored record (status, thread, agent, parent); `RunNotFound` if the caller may not see it."""
        run = await self._k.store.get_run(run_id)
        if principal is not None:
            thread = await self._k.store.get_thread(run.thread_id)
            owner = thread.owner if thread else run.principal
            if not access.may_see(self.principal(principal), owner=owner, agent_path=run.path):
                raise RunNotFound(run_id)
        return run

    async def thread(self, thread_id: str, *, principal: PrincipalLike | None = None) -> ThreadRecord:
        """A thread's record; `ThreadNotFound` when there is none or the caller may not see it."""
        record = await self._k.store.get_thread(thread_id)
        if record is None or (
            principal is not None
            and not access.may_see(self.principal(principal), owner=record.owner, agent_path=record.agent)
        ):
            raise ThreadNotFound(thread_id)
        return record

    async def threads(self, *, principal: PrincipalLike = access.LOCAL_NAME, limit: int = 50) -> list[ThreadSummary]:
        """The caller's threads, newest first (every thread in local mode)."""
        who = self.principal(principal)
        return await self._k.store.threads(owner=None if who.local else who.name, limit=limit)

    async def messages(self, thread_id: str, *, principal: PrincipalLike | None = None) -> list[ModelMessage]:
        """A thread's whole history as pydantic-ai messages, oldest first."""
        await self.thread(thread_id, principal=principal)
        return await self._k.store.load_messages(thread_id)

    async def run_messages(self, run_id: str, *, principal: PrincipalLike | None = None) -> list[ModelMessage]:
        """The messages a run added to its thread, oldest first."""
        await self.run_record(run_id, principal=principal)
        return await self._k.store.run_messages(run_id)

    async def transcript(
        self, thread_id: str, *, principal: PrincipalLike | None = None, after_seq: int = 0
    ) -> list[TranscriptEntry]:
        """A thread's history as display entries (user and agent text, tool calls and results)."""
        await self.thread(thread_id, principal=principal)
        return await self._k.store.transcript(thread_id, after_seq=after_seq)

    async def last_seq(self, thread_id: str) -> int:
        """The position of a thread's newest stored message batch (0 for none)."""
        return await self._k.store.last_seq(thread_id)

    async def request(self, request_id: str, *, principal: PrincipalLike | None = None) -> RequestState:
        """A request, whether its pause still waits, and its decision if any."""
        state = await self._k.store.get_request(request_id)
        if state is None:
            raise RequestNotFound(request_id)
        if principal is not None and not access.may_see(
            self.principal(principal), owner=state.request.principal, agent_path=state.request.agent_path
        ):
            raise RequestNotFound(request_id)
        return state

    async def inbox(
        self,
        query: InboxFilter | None = None,
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        limit: int = 50,
        cursor: str | None = None,
    ) -> InboxPage:
        """Open requests across threads that the caller may decide, oldest first, a page at a time."""
        from dataclasses import replace

        who = self.principal(principal)
        query = query or InboxFilter()
        if not who.local:
            query = replace(
                query, owner=who.name, approved_agents=access.approved_agents(who, list(self.config.agents))
            )
        return await self._k.store.inbox(query, now=self._k.clock(), limit=limit, cursor=cursor)

    async def open_requests(self, *, limit: int = 100) -> list[Any]:
        """Every open request across threads, oldest first."""
        return list(await self._k.store.open_requests(limit=limit))

    # grants and audit

    async def grants(self, *, principal: PrincipalLike | None = None) -> list[Grant]:
        """Active remembered approvals, newest first: the caller's own (every one for an admin or `None`)."""
        who = None if principal is None else self.principal(principal)
        owner = None if who is None or access.sees_every_grant(who) else who.name
        return await self._k.store.list_grants(principal=owner)

    async def revoke_grant(self, grant_id: str, *, principal: PrincipalLike | None = None) -> Grant:
        """Revoke a remembered approval; the next call it covered asks again.

        Args:
            grant_id: the grant.
            principal: who asks: only the grant's principal or an admin may; `None` (Python) skips the check.

        Raises:
            GrantNotFound: no active grant (of the caller's) has this id.
        """
        who = self.principal(principal) if principal is not None else LOCAL
        if not access.sees_every_grant(who) and grant_id not in {
            g.grant_id for g in await self._k.store.list_grants(principal=who.name)
        }:
            raise GrantNotFound(grant_id)
        now = self._k.clock()
        revoked = await self._k.store.revoke_grant(
            grant_id,
            now=now,
            audit=[{"event": "grant_revoked", "grant_id": grant_id, "principal": who.name, "at": now}],
        )
        if revoked is None:
            raise GrantNotFound(grant_id)
        return revoked

    async def audit_log(self) -> list[AuditRecord]:
        """Every audit record, oldest first."""
        return await self._k.store.audit_records()

    async def audit_page(
        self,
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        newest_first: bool = True,
        limit: int = 50,
        cursor: int | None = None,
    ) -> AuditPage:
        """One page of the audit log; approvers only."""
        self._require_approver(principal, "audit", "only approvers read the audit log")
        return await self._k.store.audit_page(newest_first=newest_first, limit=limit, cursor=cursor)

    async def audit_count(self) -> int:
        """How many records the audit log holds."""
        return await self._k.store.count_audit()

    async def verify_audit(self, *, principal: PrincipalLike | None = None) -> AuditProblem | None:
        """Check the audit chain; returns the first bad record, or `None` when intact (approvers only)."""
        if principal is not None:
            self._require_approver(principal, "audit", "only approvers may verify the audit log")
        return verify_chain(await self._k.store.audit_records())

    # adapters' own state, events, health

    async def get_mark(self, namespace: str, key: str) -> str | None:
        """A value an interface adapter keeps with sayso's state (e.g. A2A activation), or `None`."""
        return await self._k.store.get_mark(namespace, key)

    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        """Keep a value for an interface adapter in the store, under its own namespace."""
        await self._k.store.set_mark(namespace, key, value)

    def add_listener(self, listener: EventListener) -> None:
        """Call `listener(event, data)` on `request.opened`, `request.decided` and `request.expired`.

        Events come from every interface alike (Python, REST, A2A, AG-UI, the CLI); `data` holds the
        request as `request_json` shows it, and for decisions the decision, who took it and the principal.
        A listener must not block (the server's webhook sender only queues); one that raises is logged.
        """
        self._k.events.listeners.append(listener)

    async def ping(self) -> None:
        """Raise `StoreError` when the store does not answer."""
        await self._k.store.ping()

    async def verify_tools(self, agent: str | None = None) -> dict[str, list[str]]:
        """Connect to each agent's MCP servers and check its bindings; returns the MCP tools each agent sees.

        `sayso serve` calls this at start, so a binding naming a tool its server does not offer is an
        error before anyone talks to the agent.

        Raises:
            ConfigError: a binding names a tool its server does not offer (the message lists what it offers).
        """
        seen: dict[str, list[str]] = {}
        for name, built in self._k.agents.items():
            if (agent is None or name == agent) and built.mcp is not None:
                seen[name] = sorted(await built.mcp.verify())
                _check_rules_against(
                    name, built.policy, [*seen[name], *known_tool_names(self.config.agents[name], self.config)]
                )
        return seen

    def before_tool_call(self, agent: str) -> Callable[[BeforeToolCall], BeforeToolCall]:
        """A decorator that makes a function the before-call hook of `agent` (replacing its configured one).

        ```python
        @app.before_tool_call("crm")
        async def sign_in_first(call: HookCall) -> VisitUrl | None: ...
        ```

        Raises:
            ConfigError: there is no agent called `agent`.
        """
        hooked = self._k.built(agent).gate.wrapped
        assert isinstance(hooked, HookToolset), "every agent's tools run behind its hook"

        def register(hook: BeforeToolCall) -> BeforeToolCall:
            hooked.hook = before_tool_call(hook)
            return hook

        return register

    def agent_model(self, agent: str) -> Model | str:
        """The model an agent runs on (a scripted model's `calls` log the requests it answered)."""
        return self._k.built(agent).model

    def _check_open(self) -> None:
        if not self._open:
            raise UsageError("use the runtime inside `async with Sayso(...) as app:` so its store is open")

    def _require_approver(self, principal: PrincipalLike, subject_id: str, problem: str) -> None:
        who = self.principal(principal)
        if not access.may_read_audit(who):
            raise NotAllowed(subject_id, f"{who.name!r} is not an approver; {problem}", subject="approver")


def _check_rules_against(agent: str, policy: InterruptPolicy, tools: list[str]) -> None:
    """Fail closed once an agent's MCP tools are known: an exact approval rule must name one of its tools."""
    for rule in policy.tools:
        if not any(c in rule.name for c in "*?[") and not any(rule.matches(t) for t in tools):
            raise ConfigError(
                f"agent {agent!r}: the approval rule names {rule.name!r}, which is none of the agent's tools "
                f"(its MCP servers offer: {', '.join(sorted(tools)) or 'nothing'}); the call would run without asking"
            )
