"""An agent segment's loop inside the run's workflow (`run_loop`), and `TemporalLoop`, the runtime's `AgentLoop`.

A worker's runtime does everything around a segment as without Temporal (it takes the run's
lease, consumes the pause and marks the approved calls in the ledger, then writes the pause or the
end). The loop between — the model's requests and the tool calls — runs in the run's own workflow
(`sayso-<agent>-<run id>`, its `loop` Update) through pydantic-ai's Temporal durability
(`_durable`): each model request and each tool call an activity. The segment's activity waits for
the Update's result; a segment retried on another worker (its worker died) asks under the same
Update id and gets the same loop, never a second one: what it had done stays in the history. For
the same reason a wait the cluster could not answer for a while (it restarted) is asked again,
for as long as the segment's activity lives (`_asking.asked_again`), instead of failing the run.

A worker told to stop hands back at once the segments that only wait on their loops
(`TemporalLoop.hand_back`): the loop goes on in the workflow whoever waits, so the segment's
activity lets go of the run and fails, and Temporal retries it on a worker that polls, which asks
for the same loop. The stopping worker would otherwise wait its whole grace on a loop whose
workflow tasks it no longer takes. A call in flight on it (an approved call) still finishes there.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from pydantic import TypeAdapter
from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.exceptions import ModelRetry, ToolFailed
from pydantic_ai.messages import ModelMessagesTypeAdapter, ToolReturn
from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.client import Client
from temporalio.exceptions import ApplicationError, FailureError

from .._runtime._cycle import Cycle
from .._runtime._runner import LoopCall, LoopResult
from .._store import RunRecord
from ._asking import asked_again
from ._durable import LOOP_DEPS, LoopDeps, attached_json, attached_of
from ._shapes import workflow_id
from ._text import TextTo

LOOP_UPDATE = "loop"
"""The Update of a run's workflow that runs one agent segment's loop in it."""

_REQUESTS: TypeAdapter[DeferredToolRequests] = TypeAdapter(DeferredToolRequests)


@dataclass
class LoopInput:
    """What a segment's loop starts with: sayso's JSON of the history, the decided calls and the run's deps."""

    agent: str
    prompt: str | None
    history: str
    deferred: str | None
    deps: str
    instructions: str | None
    text: str | None = None
    """The token a front listens to the segment's text under (`_text`): the loop streams then; `None`: it does not."""


@dataclass
class LoopOutput:
    """How the loop ended: the messages it added, and its text, the calls it deferred, or its error."""

    new: str
    text: str | None = None
    deferred: str | None = None
    error: str | None = None
    error_type: str | None = None


class LoopAgents:
    """The worker's agents, built for Temporal (`_durable.durable_agent`), by name: what `run_loop` runs."""

    agents: ClassVar[dict[str, Agent[LoopDeps, str | DeferredToolRequests]]] = {}


async def run_loop(asked: LoopInput) -> LoopOutput:
    """One agent segment's loop, in workflow code: pydantic-ai's loop, its model requests and tool calls activities."""
    agent = LoopAgents.agents[asked.agent]
    try:
        result = await agent.run(
            asked.prompt,
            message_history=ModelMessagesTypeAdapter.validate_json(asked.history),
            deferred_tool_results=_deferred_of(asked.deferred),
            deps=LOOP_DEPS.validate_json(asked.deps),
            instructions=asked.instructions,
        )
    except (workflow.NondeterminismError, workflow.ReadOnlyContextError):
        raise
    except Exception as exc:
        # The run's failure (a model that keeps failing, a call that is not what was approved):
        # the segment records the run as failed with it, as it would in one process.
        kind, message = _described(exc)
        return LoopOutput(new="[]", error=message, error_type=kind)
    new = ModelMessagesTypeAdapter.dump_json(result.new_messages()).decode()
    output = result.output
    if isinstance(output, DeferredToolRequests):
        return LoopOutput(new=new, deferred=_REQUESTS.dump_json(output).decode())
    return LoopOutput(new=new, text=output)


class TemporalLoop:
    """The runtime's `AgentLoop` on a worker: each covered agent's segment loop runs in its run's workflow."""

    def __init__(self, client: Client, cycle: Cycle, *, agents: frozenset[str]) -> None:
        self._client = client
        self._cycle = cycle
        self._agents = agents
        self._own: set[str] = set()  # runs whose segment an activity of this worker carries on
        self._waiting: set[str] = set()  # runs whose segment waits on its loop now
        self._handed: set[str] = set()  # runs whose segment was handed back
        self._stopping = False

    def covers(self, agent: str) -> bool:
        return agent in self._agents

    @contextlib.contextmanager
    def carrying(self, run_id: str) -> Iterator[None]:
        """While an activity of this worker carries `run_id`'s segment on: a wait on its own loop may be handed back.

        Only a run's own segment is: a graph's agent node waits on its loop inside the graph's segment,
        which stops only as a whole.
        """
        self._own.add(run_id)
        try:
            yield
        finally:
            self._own.discard(run_id)

    def handed_back(self, run_id: str) -> bool:
        """Whether the segment of `run_id` stopped waiting on its loop because this worker stops (once: forgotten)."""
        handed = run_id in self._handed
        self._handed.discard(run_id)
        return handed

    def hand_back(self) -> None:
        """(The worker stops) stop waiting on the loops of the segments carried on here, now and from now on."""
        self._stopping = True
        for run_id in list(self._waiting):
            self._stop_waiting(run_id)

    def _stop_waiting(self, run_id: str) -> None:
        working = self._cycle.k.working.get(run_id)
        if run_id in self._own and working is not None:
            # The segment ends as one cut off: nothing written, its lease kept until the activity lets go.
            self._handed.add(run_id)
            working.scope.cancel()

    async def run(self, run: RunRecord, call: LoopCall) -> LoopResult:
        asked = LoopInput(
            agent=run.agent,
            prompt=call.prompt,
            history=ModelMessagesTypeAdapter.dump_json(call.history).decode(),
            deferred=_deferred_json(call.deferred),
            deps=LOOP_DEPS.dump_json(LoopDeps.of(call.deps)).decode(),
            instructions=call.instructions,
            text=call.on_text.token if isinstance(call.on_text, TextTo) else None,
        )
        # The loop runs in the workflow the run is worked on in: its own, top-level or a child (a
        # delegate's, a graph's agent node's). One segment, one Update id (the run, and its start or
        # the pause it resumes): a segment retried on another worker asks again under the same id and
        # gets the same loop, never a second.
        handle = self._client.get_workflow_handle(workflow_id(await self._home(run)))
        update_id = f"loop-{run.run_id}-{run.resume_pause_id or 'start'}"
        self._waiting.add(run.run_id)
        looping = functools.partial(handle.execute_update, LOOP_UPDATE, asked, id=update_id, result_type=LoopOutput)
        try:
            if self._stopping:
                self._stop_waiting(run.run_id)
            # The cluster out of reach for a while (restarting) is waited out, the segment's activity heartbeating.
            out: LoopOutput = await asked_again(looping)
        finally:
            self._waiting.discard(run.run_id)
        if out.error is not None:
            raise type(out.error_type or "LoopFailed", (Exception,), {})(out.error)
        new = ModelMessagesTypeAdapter.validate_json(out.new)
        output: str | DeferredToolRequests
        if out.deferred is not None:
            requests = _REQUESTS.validate_json(out.deferred)
            requests.metadata = {k: attached_of(v) or {} for k, v in requests.metadata.items()}
            output = requests
        else:
            output = out.text or ""
        return LoopResult(new_messages=new, all_messages=[*call.history, *new], output=output)

    async def _home(self, run: RunRecord) -> RunRecord:
        """The run whose workflow `run` is worked on in: its own (a top-level run, a delegate's, an agent node's)."""
        return await self._cycle.home(run)


def _described(exc: BaseException) -> tuple[str, str]:
    """The type and message of a failure's real cause (through Temporal's activity and application errors)."""
    cause: BaseException = exc
    while isinstance(cause, FailureError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, ApplicationError):
        return cause.type or "ApplicationError", cause.message
    return type(cause).__name__, str(cause)


def _deferred_json(deferred: DeferredToolResults | None) -> str | None:
    """The decided calls a segment resumes with, as JSON (sayso's metadata dumped by kind)."""
    if deferred is None:
        return None
    approvals: dict[str, object] = {}
    for call_id, approval in deferred.approvals.items():
        if isinstance(approval, ToolApproved):
            approvals[call_id] = {"approved": True, "override_args": approval.override_args}
        elif isinstance(approval, ToolDenied):
            approvals[call_id] = {"approved": False, "message": approval.message}
        else:
            approvals[call_id] = {"approved": bool(approval)}
    calls: dict[str, object] = {}
    for call_id, result in deferred.calls.items():
        if isinstance(result, ToolReturn):
            calls[call_id] = {"return": result.return_value, "content": result.content, "metadata": result.metadata}
        elif isinstance(result, ToolFailed):
            calls[call_id] = {"failed": result.message}
        elif isinstance(result, ModelRetry):
            calls[call_id] = {"retry": result.message}
        else:
            calls[call_id] = {"value": result}
    metadata = {k: attached_json(v) for k, v in deferred.metadata.items()}
    return json.dumps(to_jsonable_python({"approvals": approvals, "calls": calls, "metadata": metadata}))


def _deferred_of(text: str | None) -> DeferredToolResults | None:
    """`_deferred_json` read back, in the workflow."""
    if text is None:
        return None
    raw = json.loads(text)
    results = DeferredToolResults()
    for call_id, approval in raw["approvals"].items():
        if approval["approved"]:
            results.approvals[call_id] = ToolApproved(override_args=approval.get("override_args"))
        elif "message" in approval:
            results.approvals[call_id] = ToolDenied(approval["message"])
        else:
            results.approvals[call_id] = False
    for call_id, result in raw["calls"].items():
        if "return" in result:
            results.calls[call_id] = ToolReturn(
                result["return"], content=result["content"], metadata=result["metadata"]
            )
        elif "failed" in result:
            results.calls[call_id] = ToolFailed(result["failed"])
        elif "retry" in result:
            results.calls[call_id] = ModelRetry(result["retry"])
        else:
            results.calls[call_id] = result["value"]
    results.metadata = {k: attached_of(v) or {} for k, v in raw["metadata"].items()}
    return results
