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

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from pydantic_ai.exceptions import CallDeferred

from .._config.file import Config
from .._core.decisions import Decision
from .._core.requests import ApprovalRequest, Question, QuestionRequest, Request, default_hint
from .._core.resume import open_requests, plan_resume
from .._engine.calls import Deferral
from .._store import RunRecord, RunStatus
from ..exceptions import ConfigError
from ._results import RunResult

if TYPE_CHECKING:
    from ._kernel import Kernel


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


class RemoteAgents(Protocol):
    """How the runtime reaches remote agents: start a task, answer what it waits on."""

    async def start(self, url: str, text: str) -> RemoteOutcome: ...

    async def answer(
        self, url: str, *, task_id: str, context_id: str, decisions: list[tuple[RemoteAsk, Decision]]
    ) -> RemoteOutcome: ...


async def delegate_remote(k: Kernel, parent: RunRecord, target: str, task: str, call_id: str) -> str:
    """Hand work to a remote A2A agent; its pause becomes a proxy run whose requests mirror the remote's."""
    from . import _tree

    assert k.remote is not None, "remote delegates are configured, so the runtime has a RemoteAgents client"
    proxy = await _tree.start_child(k, parent, target, task, call_id, client_tools=())
    url = k.remote_urls[target]
    outcome = await k.remote.start(url, task)
    result = await settle(k, proxy, url, outcome)
    if result.status == "paused":
        raise CallDeferred(metadata=Deferral(kind="delegate", child_run_id=proxy.run_id).as_metadata())
    return await _tree.delegate_answer(k, result)


async def advance_remote(k: Kernel, proxy: RunRecord, *, force: bool) -> RunResult:
    """Send the person's decisions down to the remote task and mirror where it stands now."""
    from . import _step, _tree

    assert proxy.pause_id is not None and k.remote is not None
    remote = await k.store.remote_task(proxy.run_id)
    assert remote is not None, "a proxy run always has its remote task"
    state = await k.store.pause_state(proxy.pause_id)
    if open_requests(state.requests, state.decisions) and not force:
        return await _tree.result(k, proxy.run_id)
    now = k.clock()
    plan = plan_resume(proxy.run_id, state.requests, state.decisions, force=force, now=now)
    claim = await _step.consume(k, proxy, state.requests, plan, now=now, executing=(), load_history=False)
    wire: RemoteWire = "legacy" if await k.store.get_mark(REMOTE_WIRE_MARKS, proxy.run_id) == "legacy" else "v1"
    decisions = [(ask_of(r, wire=wire), plan.decisions[r.request_id].decision) for r in state.requests]
    outcome = await k.remote.answer(
        remote.url, task_id=remote.task_id, context_id=remote.context_id, decisions=decisions
    )
    return await settle(k, claim.run, remote.url, outcome)


async def settle(k: Kernel, proxy: RunRecord, url: str, outcome: RemoteOutcome) -> RunResult:
    """Record a remote task's state on its proxy run: finished, or paused on mirrored requests."""
    from ._kernel import new_id

    now = k.clock()
    await k.store.set_remote_task(proxy.run_id, url=url, task_id=outcome.task_id, context_id=outcome.context_id)
    if outcome.status != "paused":
        status: RunStatus = "completed" if outcome.status == "completed" else "failed"
        output, error = (outcome.text, None) if status == "completed" else (None, outcome.text)
        if outcome.status == "input_without_hitl":
            # kagent's wording, plus the child's context so a person can take the conversation up there.
            error = (
                f"Remote agent '{proxy.agent}' requested input without a valid HITL extension. "
                f"Its context id is {outcome.context_id!r}."
            )
        await k.store.finish_run(
            proxy, owner=k.owner, new_messages=(), status=status, output=output, error=error, now=now
        )
        return RunResult(
            run_id=proxy.run_id,
            thread_id=proxy.thread_id,
            agent=proxy.agent,
            status=status,
            output=output,
            error=error,
        )
    mirrored = [mirror(ask, proxy, url, request_id=new_id("req"), now=now) for ask in outcome.asks]
    await k.store.set_mark(REMOTE_WIRE_MARKS, proxy.run_id, outcome.asks[0].wire if outcome.asks else "v1")
    await k.store.save_pause(proxy, owner=k.owner, pause_id=new_id("pau"), new_messages=(), requests=mirrored, now=now)
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
    """A sayso request standing for what the remote task waits on (the remote's id as the call id)."""
    common: dict[str, Any] = {
        "request_id": request_id,
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
        **common,
        hint=ask.hint or default_hint(ask.tool_name),
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


def is_remote_call(request: Request) -> bool:
    """Whether a request mirrors a remote agent's call (kagent's HITL carries no edited arguments)."""
    return (
        isinstance(request, ApprovalRequest) and isinstance(request.payload, dict) and "remote_agent" in request.payload
    )
