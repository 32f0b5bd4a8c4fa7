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

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from .._config.file import Config
from .._core.audit_events import audit_body
from .._core.decisions import Decision, DecisionRecord, Skip
from .._core.requests import (
    ApprovalRequest,
    DelegateRequest,
    InputRequest,
    QuestionRequest,
    Request,
    RequestBase,
    default_hint,
    readable_pause,
)
from .._core.resume import open_requests, plan_resume
from .._store import Decided, RequestWithRun, RunRecord, RunStatus
from ..exceptions import ConfigError, InvalidInput, RunConflict
from . import _leases, _step, _tree
from ._kernel import Kernel, new_id
from ._remote_port import RemoteAgents, RemoteAsk, RemoteCutOff, RemoteOutcome, RemoteUnreachable, RemoteWire
from ._results import RunResult
from ._runner import CallOptions, Resume, Start, refuse_retry

REMOTE_CANCEL_MARKS = "remote.cancel"
"""The store's mark namespace for cancels a remote agent could not be told yet (key `kept`: a JSON list)."""

REMOTE_WIRE_MARKS = "remote.wire"
"""The store's mark namespace for the wire a remote task paused in (key: the proxy run id)."""

ANSWERED_AT_REMOTE = "answered at the remote agent first"
"""Why a mirrored request its remote task no longer waits on was closed unanswered."""

ANSWERED_ELSEWHERE = (
    "its remote agent's task was answered at the remote agent first (or went on without it), so this decision "
    "would not take effect and was not recorded; the request is closed and the run goes on as the task did"
)
"""What a decider is told when the remote task no longer waits on the request they decided."""

CARRIED_ON_LATER = "the run carries on once the remote agent says where its task stands (the recovery sweep asks it)"
"""What a decider is told when the remote agent took the decisions but its answer never came back."""

NOT_SENT_AGAIN = "it was not sent again: check with the remote agent before asking again"
"""Why a task whose handover got no answer is never handed over twice: the agent may have started it."""

logger = logging.getLogger("sayso.leases")


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
        try:
            outcome = await self._client.start(url, start.prompt or "")
        except RemoteUnreachable as exc:
            return await _failed(self._k, run, f"{exc}; nothing was sent")
        except RemoteCutOff as exc:
            return await _failed(self._k, run, f"outcome unknown: the task went out, but {exc}; {NOT_SENT_AGAIN}")
        if not outcome.task_id:  # refused before any task began
            return await _failed(self._k, run, outcome.text)
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
        decisions = await self._decisions(
            run.run_id, sent_down(pause.requests, plan.resume.decisions), plan.resume.decisions
        )
        try:
            with _leases.holding(k, claim.run):  # while this process waits on the agent, no sweep asks it instead
                outcome = await self._client.answer(
                    remote.url, task_id=remote.task_id, context_id=remote.context_id, decisions=decisions
                )
        except RemoteUnreachable as exc:
            await keep_decided(k, claim.run, pause.requests, plan.resume.decisions)
            top = await _tree.root(k, run)
            raise RunConflict(top.run_id, f"{exc}; the decisions are kept and sent when the run is resumed") from exc
        except RemoteCutOff as exc:
            # The agent may have taken them: never sent again blindly. The lease is let go so the recovery
            # sweep asks the task where it stands (`carry_on`) and carries the run on from there.
            await _leases.release(k, run.run_id)
            top = await _tree.root(k, run)
            raise RunConflict(top.run_id, f"{exc}; the decisions are recorded, and {CARRIED_ON_LATER}") from exc
        return await self._as_it_stands(claim.run, remote.url, outcome)

    async def carry_on(self, run: RunRecord, options: CallOptions) -> RunResult:
        """Take over a proxy cut off while it sent decisions down, and carry it on as its remote task stands now.

        Its process stopped while it waited on the agent, or no answer came back. A task still waiting on
        the very asks those decisions answer never got them: they are sent again. A task that moved on is
        mirrored (its answer, its new pause, its outcome unknown); one still at work is asked again at the
        next sweep. Nothing the agent took is sent twice.

        Raises:
            RunConflict: another live runtime holds the proxy, or it was cut off while its task was handed
                over (its parent's call settles that: `Cycle._carried_below`).
        """
        k = self._k
        assert self._client is not None
        remote = await k.store.remote_task(run.run_id)
        sent_on = run.resume_pause_id  # the pause whose decisions went down
        if remote is None or sent_on is None:
            raise RunConflict(run.run_id, "a remote delegate cut off while its task was handed over is its parent's")
        run = await _leases.take_over(k, run)
        try:
            outcome = await self._client.standing(remote.url, task_id=remote.task_id, context_id=remote.context_id)
            sent = await k.store.pause_state(sent_on)
            asked = sent_down(sent.requests, sent.decisions)
            never_got = {a.ask_id for a in outcome.asks} == {r.tool_call_id for r in asked}
            if outcome.status == "paused" and never_got:
                decisions = await self._decisions(run.run_id, asked, sent.decisions)
                with _leases.holding(k, run):
                    outcome = await self._client.answer(
                        remote.url, task_id=remote.task_id, context_id=remote.context_id, decisions=decisions
                    )
        except (RemoteUnreachable, RemoteCutOff) as exc:
            await _leases.release(k, run.run_id)
            logger.warning("run %s: %s; its task is asked where it stands again at the next sweep", run.run_id, exc)
            return _tree.standing(run)
        return await self._as_it_stands(run, remote.url, outcome)

    async def answered_elsewhere(self, found: RequestWithRun) -> bool:
        """Whether the remote task no longer waits on the ask `found` mirrors; if so, the proxy goes on as the task did.

        Asked before a decision on a mirrored request is recorded: a task answered at the remote agent
        first (or gone on without this ask) would not take the decision, so nothing of it is recorded.
        The proxy's pause is closed instead, what is still open in it closed unanswered
        (`ANSWERED_AT_REMOTE`, by sayso), and the proxy mirrors the task as it stands. An agent that cannot
        be asked now leaves the decision to go the usual way.
        """
        k, run = self._k, found.run
        if not self.serves(run) or run.pause_id is None or found.pause_status != "open" or found.decision is not None:
            return False
        if found.request.expires_at is not None and k.clock() >= found.request.expires_at:
            return False  # expired, here as at the remote agent: refused as expired, and closed so by the expiry sweep
        remote = await k.store.remote_task(run.run_id)
        if remote is None:
            return False
        assert self._client is not None
        try:
            outcome = await self._client.standing(remote.url, task_id=remote.task_id, context_id=remote.context_id)
        except (RemoteUnreachable, RemoteCutOff):
            return False
        waiting = {a.ask_id for a in outcome.asks} if outcome.status == "paused" else set[str]()
        if found.request.tool_call_id in waiting:
            return False
        pause = await k.store.pause_state(run.pause_id)
        now = k.clock()
        if waiting and waiting <= {r.tool_call_id for r in pause.requests}:
            # The task still waits on the rest of this very pause: only what it no longer waits on closes here,
            # and what was (or will be) decided here for the rest goes down when the pause resumes.
            gone = [r for r in open_requests(pause.requests, pause.decisions) if r.tool_call_id not in waiting]
            skips = plan_resume(run.run_id, gone, {}, force=True, now=now, skip_reason=ANSWERED_AT_REMOTE).added
            await k.store.add_decisions(skips, audit=[audit_body(r, d) for r, d in zip(gone, skips, strict=True)])
            k.events.decided(gone, skips)
            return True
        plan = plan_resume(
            run.run_id, pause.requests, pause.decisions, force=True, now=now, skip_reason=ANSWERED_AT_REMOTE
        )
        claim = await _step.consume(k, run, pause.requests, plan, now=now, executing=(), load_history=False)
        await self._as_it_stands(claim.run, remote.url, outcome)
        return True

    async def cancel_remote(self, closed: Sequence[RunRecord]) -> None:
        """Tell the remote agents of the proxies among `closed` (runs a cancel just closed) to cancel their tasks.

        Otherwise a remote task would still wait on asks nobody here waits for, and approving one at the
        remote agent would run its call. An agent that cannot be reached now is told by the recovery
        sweep (`deliver_cancels`); one that cancels no tasks has its asks skipped, as the cancel skipped them here.
        """
        for proxy in closed:
            remote = await self._k.store.remote_task(proxy.run_id) if self.serves(proxy) else None
            if remote is not None and proxy.pause_id is not None:
                await self._cancel_or_keep(
                    [proxy.run_id, proxy.pause_id, remote.url, remote.task_id, remote.context_id]
                )

    async def deliver_cancels(self) -> None:
        """Send the cancels kept for remote agents that could not be reached; those still away stay kept.

        A cancel leaves the kept list only once its agent took it, so a process dying midway loses none.
        """
        if not self.urls:
            return
        for entry in json.loads(await self._k.store.get_mark(REMOTE_CANCEL_MARKS, "kept") or "[]"):
            try:
                await self._cancel(entry)
            except (RemoteUnreachable, RemoteCutOff):
                continue
            await self._k.store.update_mark(REMOTE_CANCEL_MARKS, "kept", _without(entry[0]))

    async def _cancel_or_keep(self, entry: list[str]) -> None:
        """Cancel the remote task of `entry` (proxy run, its closed pause, url, task, context), or keep it for later."""
        try:
            await self._cancel(entry)
        except (RemoteUnreachable, RemoteCutOff) as exc:
            logger.warning("run %s: %s; its task is cancelled at the next sweep", entry[0], exc)
            await self._k.store.update_mark(REMOTE_CANCEL_MARKS, "kept", lambda v: json.dumps([*_listed(v), entry]))

    async def _cancel(self, entry: list[str]) -> None:
        """Cancel the remote task of `entry`, or skip its asks where the agent cancels no tasks.

        Raises:
            RemoteUnreachable, RemoteCutOff: the agent did not take it.
        """
        assert self._client is not None
        proxy_id, pause_id, url, task_id, context_id = entry
        if not await self._client.cancel(url, task_id=task_id, context_id=context_id):
            pause = await self._k.store.pause_state(pause_id)
            skips = await self._decisions(proxy_id, pause.requests, pause.decisions)
            await self._client.answer(url, task_id=task_id, context_id=context_id, decisions=skips)

    async def _decisions(
        self, run_id: str, requests: Sequence[Request], decided: Mapping[str, DecisionRecord]
    ) -> list[tuple[RemoteAsk, Decision]]:
        """The decisions of a proxy's pause as the remote task takes them, in the form it paused in."""
        wire: RemoteWire = "legacy" if await self._k.store.get_mark(REMOTE_WIRE_MARKS, run_id) == "legacy" else "v1"
        return [(ask_of(r, wire=wire), decided[r.request_id].decision) for r in requests]

    async def _as_it_stands(self, proxy: RunRecord, url: str, outcome: RemoteOutcome) -> RunResult:
        """The proxy as its remote task stands: settled, or (still at work) left for the recovery sweep to ask again."""
        if outcome.status == "working":
            await _leases.release(self._k, proxy.run_id)
            return _tree.standing(proxy)
        return await settle(self._k, proxy, url, outcome)

    async def answer_below(self, request: DelegateRequest, outcome: RunResult) -> DecisionRecord:
        raise AssertionError("a proxy run's pause mirrors the remote task's asks; no run of sayso's is below it")

    def check(self, name: str) -> None:
        pass  # the remote agent answers for itself when its task starts

    async def resume_decided(self, decided: Decided, options: CallOptions) -> RunResult:
        raise AssertionError("a proxy run is resumed after the decision's commit, never claimed by it")

    async def retry(self, run: RunRecord, options: CallOptions) -> RunResult:
        raise refuse_retry(run)


def sent_down(requests: Sequence[Request], decided: Mapping[str, DecisionRecord]) -> list[Request]:
    """The requests of a proxy's pause whose decisions go down: not those its remote task stopped waiting on."""
    return [r for r in requests if decided[r.request_id].decision != Skip(reason=ANSWERED_AT_REMOTE)]


def _listed(value: str | None) -> list[list[str]]:
    kept: list[list[str]] = json.loads(value or "[]")
    return kept


def _without(proxy_id: str) -> Callable[[str | None], str]:
    return lambda value: json.dumps([entry for entry in _listed(value) if entry[0] != proxy_id])


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


async def _failed(k: Kernel, proxy: RunRecord, error: str) -> RunResult:
    """Fail a proxy whose task the remote agent never took, or took without a word back (its parent reads `error`)."""
    await k.store.finish_run(
        proxy, holder=k.holder, new_messages=(), status="failed", output=None, error=error, now=k.clock()
    )
    return RunResult(run_id=proxy.run_id, thread_id=proxy.thread_id, agent=proxy.agent, status="failed", error=error)


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
        expires_at=ask.expires_at,
        principal=proxy.principal,
        parent_call_id=proxy.parent_call_id,
    )
    if ask.kind == "question":
        return QuestionRequest.of(common, questions=ask.questions)
    if ask.kind == "input":
        schema = ask.response_schema or {}
        return InputRequest.of(
            common, node=ask.tool_name, message=ask.message, payload=ask.payload, response_schema=schema
        )
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
    if isinstance(request, InputRequest):
        return RemoteAsk(
            kind="input",
            ask_id=request.tool_call_id,
            tool_name=request.node,
            message=request.message,
            payload=request.payload,
            response_schema=request.response_schema,
            wire=wire,
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
