"""`Sayso`: the runtime's public verbs, the one door every interface goes through.

Each verb resolves the caller to a `Principal`, applies the one access rule of
`sayso._core.access`, gathers what the call says about its runs (`CallOptions`: a host's grants,
the widest scope, the text sink, each a keyword of the verb) and hands the work to the verb that
owns it (one module each in `_verbs`); reading verbs go straight to the store port. REST, A2A, AG-UI, the
web UI and the CLI call only these methods.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from pydantic_ai.models import Model

from .._config.checks import known_tool_names
from .._config.file import Config, load_config
from .._core import access
from .._core.decisions import Decision, Via
from .._core.grants import Grant
from .._core.policy import InterruptPolicy
from .._core.requests import ClientTool
from .._core.resume import Closer
from .._engine.agents import build_agents, build_models, open_models
from .._engine.hooks import BeforeToolCall, before_tool_call
from .._store import RunStore, store_from_url
from ..exceptions import ConfigError
from . import _audit, _live, _tree
from ._cycle import Cycle
from ._defaults import DEFAULT_REMOTE_AGENTS, engine_of, workflow_runner_of
from ._events import EventListener
from ._kernel import Kernel
from ._link_verbs import LinkVerbs
from ._mark_verbs import MarkVerbs
from ._outbox_verbs import OutboxVerbs
from ._reading import PrincipalLike, Reading
from ._remote import remote_delegates
from ._remote_port import RemoteAgents
from ._results import DecideResult, RunResult
from ._runner import CallOptions, DecisionCall, Engine
from ._verbs import decide as _decide
from ._verbs import resume as _resume

if TYPE_CHECKING:
    from ._watch import Change

# Verbs other than decide and resume (start, answer, cancel, recover, expire, watch, mailed links) are imported
# by their method when first called: a process that only decides (`sayso decide`) loads none of them.


class Sayso(LinkVerbs, MarkVerbs, OutboxVerbs, Reading):
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
        engine: Engine | Literal["config", "here"] = "config",
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
            engine: where top-level runs do their work: the config's `engine:` (`"config"`), this
                process whatever the config says (`"here"`: what `sayso worker` runs), or an `Engine`.
        """
        self.config = config
        built_models: dict[str, Model | str] = {**build_models(config), **(models or {})}
        urls = remote_delegates(config)
        if remote_agents is None and urls and DEFAULT_REMOTE_AGENTS:
            remote_agents = DEFAULT_REMOTE_AGENTS[-1](config)
        if urls and remote_agents is None:
            raise ConfigError("remote delegates are configured but no A2A client is available; pass remote_agents")
        self._k = Kernel(
            config=config,
            store=store or store_from_url(config.store_url(), base_dir=config.base_dir),
            agents=build_agents(config, built_models),
            clock=clock,
            lease_seconds=lease_seconds,
        )
        _audit.use_key(self._k)
        chosen = engine_of(config) if engine == "config" else None if engine == "here" else engine
        self._cycle = Cycle(
            self._k, workflows=workflow_runner_of(config), remote_urls=urls, remote=remote_agents, engine=chosen
        )
        self._open = False
        self._models = AsyncExitStack()
        self._mcp = AsyncExitStack()
        self._holder: _live.Holder | None = None

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
        await _audit.warn_unusable(self._k.store, self._k.store.audit_key, self.config)
        self._models = await open_models(self._k.agents.values())
        self._mcp, self._holder = await _live.open_mcp_host(self._cycle)
        self._open = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open = False
        try:
            await self._mcp.aclose()
            await self._models.aclose()
            if self._cycle.engine is not None:
                await self._cycle.engine.aclose()
        finally:
            await self._k.store.aclose()

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
        offer_wider_scopes: bool = True,
        run_id: str | None = None,
        on_text: Callable[[str], Awaitable[None]] | None = None,
        on_start: Callable[[str, str], None] | None = None,
        via: Via = "python",
    ) -> RunResult:
        """Send a user message and run the agent until it finishes or pauses.

        A message on a thread whose run is paused skips that run's open requests: the agent
        closes them and answers the new message instead (the skips are `principal`'s, through `via`).

        Args:
            message: what the person said.
            agent: which agent answers a new thread (default: the config's entry agent).
            thread_id: the thread to continue, or a new thread's id; `None` starts a new thread.
            principal: who is speaking; a new thread is owned by them, and only they speak in it.
            client_tools: tools the client runs itself; the agent sees those its `client_tools` allows.
            grants: remembered approvals kept by an external host; when given, they are the only ones
                honoured for this run (delegates included) and no grant is stored by sayso.
            offer_wider_scopes: with `grants`, whether the host remembers decisions at all; `False`
                offers only `once` on the requests this run raises.
            run_id: the new run's id, for an interface that must name the run before it ends (an A2A
                task returned at once); an unguessable id from `sayso._runtime.new_id("run")`.
            on_text: receives the run's text as the model writes it (A2A's artifact updates): each
                piece as the model produces it (models that cannot stream give one response at a
                time). Delegates' text is not sent: what a delegate says reaches its coordinator.
            on_start: hears `(run_id, thread_id)` once the message is taken (every check passed, the
                run written), before the agent works: a stream can answer a refused message with its
                error status, and name a new thread at once.
            via: the interface the message came through.

        Raises:
            InvalidInput: the message, `thread_id` (not an id) or a client tool (`sayso._core.client_tools`)
                does not fit; nothing is written.
            ThreadBusy: the thread has a run in progress in some process.
            NotAllowed: the thread belongs to someone else.
        """
        self._check_open()
        from ._verbs import start as _start

        return await _start.start(
            self._cycle,
            message,
            agent=agent,
            thread_id=thread_id,
            principal=self.principal(principal),
            client_tools=client_tools,
            options=CallOptions.of(grants, offer_wider_scopes, on_text),
            run_id=run_id,
            on_start=on_start,
            via=via,
        )

    async def decide(
        self,
        request_id: str,
        decision: Decision,
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        resume: bool = True,
        via: Via = "python",
        on_text: Callable[[str], Awaitable[None]] | None = None,
    ) -> DecideResult:
        """Record a decision; when it was the last open request of the pause, resume the run.

        Repeating the decision already taken is a harmless no-op; a different second decision
        is refused, and a refused decision changes nothing. `via` names the interface the
        decision came through, so others see "Approved by alice (CLI)". With `resume=False` the decision is
        only recorded; a pause left fully decided and unresumed for longer than the lease is
        resumed by the next recovery sweep (`recover`), as if its decider had died.

        Raises:
            RequestNotFound: no request has this id.
            NotAllowed: the principal is neither the thread's owner nor an approver for its agent.
            InvalidDecision: the decision does not fit the request; it stays open.
            AlreadyDecided: a different decision was taken first.
            RequestExpired: the request expired.

        `on_text` receives the resumed run's text as the model writes it, as for `run`.
        """
        self._check_open()
        who, options = self.principal(principal), CallOptions(on_text=on_text)
        if self._cycle.engine is not None:
            call = DecisionCall(request_id=request_id, decision=decision, principal=who, via=via, resume=resume)
            done = await _decide.decide_there(self._cycle, call, options)
        else:
            done = await _decide.decide(
                self._cycle, request_id, decision, principal=who, resume=resume, via=via, options=options
            )
        return replace(done, run=_tree.shown_to(done.run, who))

    async def answer_pause(
        self,
        run_id: str,
        answers: Mapping[str, Decision],
        *,
        principal: PrincipalLike = access.LOCAL_NAME,
        rest: Literal["wait", "skip"] = "wait",
        grants: Sequence[Grant] | None = None,
        offer_wider_scopes: bool = True,
        via: Via = "python",
        on_text: Callable[[str], Awaitable[None]] | None = None,
    ) -> RunResult:
        """Answer several open requests of a paused run at once, then resume it when nothing is left open.

        Every answer is checked before any is recorded (one refused answer records none); they are
        recorded in one transaction. Requests left out wait (`rest="wait"`) or count as skipped and
        the run resumes now (`rest="skip"`). `grants` and `offer_wider_scopes` are as for `run`: a
        host that keeps remembered approvals sends them again with each answer, and sayso stores
        none of the approvals given here. `on_text` receives the resumed run's text as for `run`.

        Raises:
            RequestNotFound: an answer names a request that is not this run's.
            DecisionRefused: an answer does not fit its request, or was decided differently first.
            RunConflict: the run is not paused.
        """
        self._check_open()
        from ._verbs import answer as _answer

        who, options = self.principal(principal), CallOptions.of(grants, offer_wider_scopes, on_text)
        found = await _answer.answer_pause(
            self._cycle, run_id, answers, principal=who, rest=rest, options=options, via=via
        )
        return _tree.shown_to(found, who)

    async def resume(
        self,
        run_id: str,
        *,
        force: bool = False,
        principal: PrincipalLike | None = None,
        via: Via = "python",
        on_text: Callable[[str], Awaitable[None]] | None = None,
    ) -> RunResult:
        """Resume a paused run, or carry on a run whose process died.

        Args:
            run_id: the run.
            force: resume even if requests are open; they count as skipped, by `principal` (or `local`) through
                `via`, as the audit log says.
            principal: who asks; checked like a decision when given.
            via: the interface the resume came through.
            on_text: receives the run's text as the model writes it, as for `run`.

        Raises:
            NotReady: requests are open and `force` is false.
            NotAllowed: forced by a `principal` who is not the thread's owner and may not decide an open request.
            PauseConsumed: another process resumed this pause first.
            RunConflict: the run is finished, or is being carried on by a live process.
        """
        self._check_open()
        run = await self.run_record(run_id, principal=principal)
        who = self.principal(principal) if principal is not None else None
        options = CallOptions(on_text=on_text, closer=Closer((who or access.LOCAL).name, via))
        found = await _resume.resume(self._cycle, run, force=force, options=options, principal=who)
        return found if who is None else _tree.shown_to(found, who)

    async def cancel(self, run_id: str, *, principal: PrincipalLike | None = None, via: Via = "python") -> RunResult:
        """Cancel a paused or working run: its open requests (delegates' too) close as skipped and nothing runs.

        The skips are `principal`'s (or `local`'s) through `via`, as the audit log says.

        A working run is stopped where it is, when this runtime is running it (what already ran is kept).

        Raises:
            NotAllowed: a `principal` who is not the thread's owner and may not decide one of its open requests.
            RunConflict: the run is finished, or another process is working on it.
        """
        self._check_open()
        from ._verbs import cancel as _cancel

        run = await self.run_record(run_id, principal=principal)
        who = self.principal(principal) if principal is not None else None
        result = await _cancel.cancel(self._cycle, run, principal=who, closer=Closer((who or access.LOCAL).name, via))
        await self._cycle.changed(run)
        return result if who is None else _tree.shown_to(result, who)

    async def hold(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunResult:
        """Keep the live MCP calls a paused run waits on open here until their forms are answered, from any process.

        See docs/guides/mcp.md#which-answers-survive-a-restart.

        A server's form on a live call of a tool that may not be called again can be handed back
        only by the process holding the call, so a program that holds one waits here (as
        `sayso run` does) while the person answers anywhere: `sayso decide`, the web UI, another
        replica. The run is carried on in this process; returns where it stands then (paused
        again, completed, failed). Returns at once when the run waits on no form held here.
        Closing the runtime closes every form it still holds as cancelled.
        """
        await self.run_record(run_id, principal=principal)
        if self._holder is None:
            return await _tree.result(self._k, run_id)
        return await self._holder.hold(run_id)

    async def result(self, run_id: str, *, principal: PrincipalLike | None = None) -> RunResult:
        """Where a run stands now, with the requests it still waits on (those the caller may see)."""
        await self.run_record(run_id, principal=principal)
        found = await _tree.result(self._k, run_id)
        return found if principal is None else _tree.shown_to(found, self.principal(principal))

    async def recover(self, *, on_run: Callable[[str, str], None] | None = None) -> list[RunResult]:
        """Carry on every run whose process died, so nobody has to resume it by hand.

        See docs/guides/operations.md#recovery.

        Finds running runs whose lease lapsed (or whose process on this host is gone) and carries
        each on from the store under the ledger rules: an approved call cut off mid-run is recorded
        as `outcome unknown` (audit and ledger) and never runs twice; the run then pauses or finishes
        and its thread takes messages again. `sayso serve` calls this at start and every few seconds;
        several runtimes may call it at once (each run is taken over by one). Returns the runs carried on.
        `on_run` hears `(run_id, thread_id)` of each top-level run as it is carried on, as `run`'s `on_start`.
        """
        self._check_open()
        from ._verbs import recover as _recover

        return await _recover.recover(self._cycle, on_run=on_run)

    async def expire(
        self, *, principal: PrincipalLike | None = None, on_run: Callable[[str, str], None] | None = None
    ) -> list[RunResult]:
        """Close every paused run whose open requests have all expired; each agent answers with what it knows.

        Escalation steps that came due (remind, notify, add approvers) fire first, each once across replicas,
        and a request's timeout decides what its rule's `on_timeout` says (expire, reject or approve).

        Args:
            principal: who asks: approvers only; `None` (Python, the server's own sweep) skips the check.
            on_run: hears `(run_id, thread_id)` of each top-level run as it is closed, as `run`'s `on_start`.
        """
        self._check_open()
        if principal is not None:
            self._require_approver(principal, "expire", "only approvers may run expiry")
        from ._verbs import escalate as _escalate
        from ._verbs import expire as _expire

        await _escalate.escalate(self._k)
        return await _expire.expire(self._cycle, on_run=on_run)

    # events, health (adapters' marks: `MarkVerbs`)

    def watch(
        self, *, principal: PrincipalLike = access.LOCAL_NAME, thread_id: str | None = None, every: float = 1.0
    ) -> AsyncGenerator[list[Change], None]:
        """Follow what changes for `principal`, whichever process changed it; one list of changes per look.

        The first list is empty and says watching has begun: what the caller reads after it is
        not missed. Then every `every` seconds (at once when this process changes something) the
        store is read again and the changes since the last look are yielded (often none):
        requests opened and closed (`RequestClosed` holds the decision, who took it and through
        which interface), the watched `thread_id` moving on, the principal's threads changing.
        Only what the principal may see is reported. Close the iterator (`aclose`) to stop.
        """
        self._check_open()
        from . import _watch

        return _watch.watch(self, self._k, principal=self.principal(principal), thread_id=thread_id, every=every)

    def add_listener(self, listener: EventListener) -> None:
        """Call `listener(event, data)` on `request.opened`, `request.decided` and `request.expired`.

        Events come from every interface alike (Python, REST, A2A, AG-UI, the CLI); `data` holds the
        request as `request_json` shows it, and for decisions the decision, who took it, the principal and
        the interface it came through (`via`).
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

    def entry(self, agent: str | None = None) -> str:
        """The agent or workflow a caller named (the config's entry agent when `None`), once it is known to exist.

        Raises:
            AgentNotFound: no agent or workflow has that name (the message lists those that exist).
        """
        return self._cycle.entry(agent or self._k.config.entry_agent)

    def before_tool_call(self, agent: str) -> Callable[[BeforeToolCall], BeforeToolCall]:
        """A decorator that makes a function the before-call hook of `agent` (replacing its configured one).

        ```python
        @app.before_tool_call("crm")
        async def sign_in_first(call: HookCall) -> VisitUrl | None: ...
        ```

        Raises:
            AgentNotFound: there is no agent called `agent`.
        """
        gate = self._k.built(agent).gate

        def register(hook: BeforeToolCall) -> BeforeToolCall:
            gate.hook = before_tool_call(hook)
            return hook

        return register

    def agent_model(self, agent: str) -> Model | str:
        """The model an agent runs on (a scripted model's `calls` log the requests it answered)."""
        return self._k.built(agent).model


def _check_rules_against(agent: str, policy: InterruptPolicy, tools: list[str]) -> None:
    """Fail closed once an agent's MCP tools are known: an exact approval rule must name one of its tools."""
    for rule in policy.tools:
        if not any(c in rule.name for c in "*?[") and not any(rule.matches(t) for t in tools):
            raise ConfigError(
                f"agent {agent!r}: the approval rule names {rule.name!r}, which is none of the agent's tools "
                f"(its MCP servers offer: {', '.join(sorted(tools)) or 'nothing'}); the call would run without asking"
            )
