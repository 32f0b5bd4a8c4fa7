"""Remote delegates: an agent behind an A2A URL used as a delegate, its pauses mirrored into sayso's.

See docs/guides/a2a.md#remote-agents-as-delegates.

The runtime talks to a remote agent through the small `RemoteAgents` port below; the A2A client
that implements it lives with the protocol (`sayso.protocols.a2a`) and is handed to the runtime
when it is built (the package root supplies it by default), so the runtime never imports an
adapter. A remote delegate's task is represented here by a local *proxy run*: its requests mirror
what the remote task waits on, so the inbox, decisions, nesting and restarts work exactly as for
a local delegate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeAlias

from .._config.file import Config
from .._core.decisions import Decision, DecisionRecord
from .._core.requests import (
    ApprovalRequest,
    DelegateRequest,
    Question,
    QuestionRequest,
    Request,
    RequestBase,
    default_hint,
    readable_pause,
)
from .._store import Decided, RunRecord, RunStatus
from ..exceptions import ConfigError, InvalidInput, RunConflict
from . import _step, _tree
from ._kernel import Kernel, new_id
from ._results import RunResult
from ._runner import CallOptions, Resume, Start, refuse_retry

RemoteWire: TypeAlias = Literal["v1", "legacy"]
"""How a remote agent speaks human-in-the-loop: kagent's v1 extension, or kagent 0.x's DataParts."""

REMOTE_WIRE_MARKS = "remote.wire"
"""The store's mark namespace for the wire a remote task paused in (key: the proxy run id)."""


@dataclass(frozen=True, kw_only=True)
class RemoteAsk:
    """One thing a paused remote task waits on, as its visible tool."""

    kind: Literal["approval", "question"]
    ask_id: str
    """The id the remote agent expects back in its response."""
    tool_name: str
    args: dict[str, object] = field(default_factory=dict[str, object])
    hint: str | None = None
    questions: tuple[Question, ...] = ()
    call_id: str | None = None
    """The remote model's id for the call (kagent's `call_id`; what kagent 0.x keys its decisions by)."""
    wire: RemoteWire = "v1"
    """How the remote agent paused, and so how its answer goes back."""


@dataclass(frozen=True, kw_only=True)
class RemoteOutcome:
    """Where a remote task stands after a message."""

    status: Literal["completed", "paused", "failed", "input_without_hitl"]
    """`input_without_hitl`: the remote task waits for input but says neither what nor how to answer."""
    task_id: str
    context_id: str
    text: str = ""
    """The remote agent's answer (or what went wrong)."""
    asks: tuple[RemoteAsk, ...] = ()


class RemoteUnreachable(Exception):
    """The message never reached the remote agent: no connection was made, so it may be sent again."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        self.problem = problem
        super().__init__(f"the remote agent at {url} could not be reached: {problem}")


class RemoteAgents(Protocol):
    """How the runtime reaches remote agents: start a task, answer what it waits on.

    A message that certainly did not reach the agent raises `RemoteUnreachable`.
    """

    async def start(self, url: str, text: str) -> RemoteOutcome: ...

    async def answer(
        self, url: str, *, task_id: str, context_id: str, decisions: list[tuple[RemoteAsk, Decision]]
    ) -> RemoteOutcome: ...


class RemoteRunner:
    """The `Runner` of a remote delegate's proxy run: its work happens at the remote agent (`RemoteAgents`)."""

    local = False
    reads_grants = False  # the remote agent keeps its own
    durable_start = True
    claims_with_decision = False  # a decision on a proxy's mirrored ask is sent down by the cycle's resume

    def __init__(self, k: Kernel, urls: dict[str, str], client: RemoteAgents | None) -> None:
        self._k = k
        self.urls = urls
        """Remote (A2A) delegates by tool name."""
        self._client = client

    def serves(self, run: RunRecord) -> bool:
        """Whether `run` is a remote delegate's proxy run."""
        return run.parent_run_id is not None and run.agent in self.urls

    async def start(self, run: RunRecord, start: Start, options: CallOptions) -> RunResult:
        # Hand the work to the remote agent; its pause becomes the proxy's, mirroring the remote's asks.
        assert self._client is not None, "remote delegates are configured, so the runtime has a RemoteAgents client"
        url = self.urls[run.agent]
        outcome = await self._client.start(url, start.prompt or "")
        return await settle(self._k, run, url, outcome)

    async def resume(self, run: RunRecord, resume: Resume, options: CallOptions) -> RunResult:
        # Send the person's decisions down to the remote task and mirror where it stands now.
        # No call runs here, so nothing is marked in the ledger.
        k = self._k
        assert self._client is not None
        pause, plan = resume.pause, resume.plan
        remote = await k.store.remote_task(run.run_id)
        assert remote is not None, "a proxy run always has its remote task"
        claim = await _step.consume(k, run, pause.requests, plan.resume, now=plan.now, executing=(), load_history=False)
        wire: RemoteWire = "legacy" if await k.store.get_mark(REMOTE_WIRE_MARKS, run.run_id) == "legacy" else "v1"
        decisions = [(ask_of(r, wire=wire), plan.resume.decisions[r.request_id].decision) for r in pause.requests]
        try:
            outcome = await self._client.answer(
                remote.url, task_id=remote.task_id, context_id=remote.context_id, decisions=decisions
            )
        except RemoteUnreachable as exc:
            await keep_decided(k, claim.run, pause.requests, plan.resume.decisions)
            top = await _tree.root(k, run)
            raise RunConflict(top.run_id, f"{exc}; the decisions are kept and sent when the run is resumed") from exc
        return await settle(k, claim.run, remote.url, outcome)

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        raise RunConflict(run.run_id, "a remote delegate's task carries on at its agent; its parent's resume asks it")

    async def answer_below(self, request: DelegateRequest, outcome: RunResult) -> DecisionRecord:
        raise AssertionError("a proxy run's pause mirrors the remote task's asks; no run of sayso's is below it")

    def check(self, name: str) -> None:
        pass  # the remote agent answers for itself when its task starts

    async def resume_decided(self, decided: Decided, options: CallOptions) -> RunResult:
        raise AssertionError("a proxy run is resumed after the decision's commit, never claimed by it")

    async def retry(self, run: RunRecord, options: CallOptions) -> RunResult:
        raise refuse_retry(run)


async def keep_decided(
    k: Kernel, proxy: RunRecord, requests: Sequence[Request], decisions: Mapping[str, DecisionRecord]
) -> None:
    """Pause a proxy again on the asks whose decisions could not be sent, each decided as before.

    The pause they were on is consumed, so they get new ids; the pause waits on no one, and the
    next resume of the run (or the server's sweep of stalled runs) sends the same decisions down.
    """
    now = k.clock()
    again = [replace(r, request_id=new_id("req")) for r in requests]
    await k.store.save_pause(proxy, holder=k.holder, pause_id=new_id("pau"), new_messages=(), requests=again, now=now)
    kept = zip(requests, again, strict=True)
    await k.store.add_decisions([replace(decisions[old.request_id], request_id=new.request_id) for old, new in kept])


async def settle(k: Kernel, proxy: RunRecord, url: str, outcome: RemoteOutcome) -> RunResult:
    """Record a remote task's state on its proxy run: finished, or paused on mirrored requests.

    A pause that cannot be taken as it came fails the proxy instead, `readable_pause` naming why.
    """
    now = k.clock()
    mirrored: list[Request] = []
    unreadable: str | None = None
    if outcome.status == "paused":
        try:  # checked before anything of the pause is stored: one bad value must not leave a row nobody can read
            mirrored = readable_pause([mirror(a, proxy, url, request_id=new_id("req"), now=now) for a in outcome.asks])
        except InvalidInput as exc:
            unreadable = exc.problem
    await k.store.set_remote_task(proxy.run_id, url=url, task_id=outcome.task_id, context_id=outcome.context_id)
    if outcome.status != "paused" or unreadable is not None:
        status: RunStatus = "completed" if outcome.status == "completed" else "failed"
        output, error = (outcome.text, None) if status == "completed" else (None, outcome.text)
        if outcome.status == "input_without_hitl":
            # kagent's wording, plus the child's context so a person can take the conversation up there.
            error = (
                f"Remote agent '{proxy.agent}' requested input without a valid HITL extension. "
                f"Its context id is {outcome.context_id!r}."
            )
        elif unreadable is not None:
            error = (
                f"Remote agent '{proxy.agent}' paused on a request sayso cannot take: {unreadable}. "
                f"Its context id is {outcome.context_id!r}."
            )
        await k.store.finish_run(
            proxy, holder=k.holder, new_messages=(), status=status, output=output, error=error, now=now
        )
        return RunResult(
            run_id=proxy.run_id,
            thread_id=proxy.thread_id,
            agent=proxy.agent,
            status=status,
            output=output,
            error=error,
        )
    await k.store.set_mark(REMOTE_WIRE_MARKS, proxy.run_id, outcome.asks[0].wire if outcome.asks else "v1")
    await k.store.save_pause(
        proxy, holder=k.holder, pause_id=new_id("pau"), new_messages=(), requests=mirrored, now=now
    )
    k.events.opened(mirrored)
    return RunResult(
        run_id=proxy.run_id, thread_id=proxy.thread_id, agent=proxy.agent, status="paused", requests=tuple(mirrored)
    )


def remote_delegates(config: Config) -> dict[str, str]:
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


def mirror(ask: RemoteAsk, proxy: RunRecord, url: str, *, request_id: str, now: float) -> Request:
    """A sayso request standing for what the remote task waits on (the remote's id as the call id).

    Its values are the remote agent's as they came, unconverted, for `readable_pause` to judge.
    """
    common = RequestBase(
        request_id=request_id,
        run_id=proxy.run_id,
        thread_id=proxy.thread_id,
        agent_path=proxy.path,
        tool_call_id=ask.ask_id,
        tool_name=ask.tool_name,
        args=ask.args,
        created_at=now,
        principal=proxy.principal,
        parent_call_id=proxy.parent_call_id,
    )
    if ask.kind == "question":
        return QuestionRequest.of(common, questions=ask.questions)
    return ApprovalRequest.of(
        common,
        hint=default_hint(ask.tool_name) if ask.hint is None or ask.hint == "" else ask.hint,
        payload={"remote_agent": url, "call_id": ask.call_id},
        scopes=("once",),
    )


def ask_of(request: Request, *, wire: RemoteWire = "v1") -> RemoteAsk:
    """The remote ask a mirrored request stands for."""
    if isinstance(request, QuestionRequest):
        return RemoteAsk(
            kind="question", ask_id=request.tool_call_id, tool_name="ask_user", questions=request.questions, wire=wire
        )
    call_id = request.payload.get("call_id") if isinstance(request, ApprovalRequest) and request.payload else None
    return RemoteAsk(
        kind="approval",
        ask_id=request.tool_call_id,
        tool_name=request.tool_name,
        args=request.args,
        call_id=call_id if isinstance(call_id, str) else None,
        wire=wire,
    )
