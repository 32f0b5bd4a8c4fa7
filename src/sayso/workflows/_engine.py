"""The durable stepper: runs a workflow one node at a time from a state that is plain JSON.

`WorkflowEngine.start` and `.resume` take a [`WorkflowState`][] and return where the run
stands: finished (with the output), paused (on a node's `RequestInput`, or on an agent node's
own requests) or failed (naming the node). Between calls nothing is held in memory: a fresh
engine in a fresh process resumes from the last saved state.

**What is saved, and when.** The engine calls `persistence.save(state)` when a run starts, after every node
that finishes (its output is appended to `state.finished` and is never recomputed), when it pauses (with what
it waits on, so a store can write the pause in the same transaction), when an answer is recorded, and when the
run fails or completes. `state.finished` only ever grows, so a store may append its new tail.

**How a node resumes after a question.** A generator node that yielded `RequestInput` is not
kept alive while the person thinks. When the answer arrives the node is *replayed* from the
top, with the same input and the same `ctx.state` it first saw, and each `RequestInput` it
yields is answered from `state.answers` in order, until it reaches the new question or
finishes; this is how LangGraph's `interrupt()` resumes a node. So the code of a node before
its last question runs once per answer: wrap side effects in a step (`await ctx.step("charge",
fn)`, recorded by the engine's `journal` and returned from it on a replay), keep them after the
last `yield`, or make them idempotent; and ask the same questions in the same order on every
replay (a replay that asks fewer questions than were answered fails the node).

**Outputs are stored as JSON.** A node's output is turned into JSON when it finishes (pydantic
models and dataclasses included); the next node receives that JSON, validated into its
`node_input` annotation when it has one. A run that resumes in a fresh process therefore
hands every node exactly what it would have got without the restart; annotate `node_input`
to receive a model instance.

**Failures.** A node that raises, returns something that is not JSON, or chooses a route it
does not have fails the run with the node named; `resume` runs that node again, with the
answers it already got, and only that node.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Protocol

import anyio.to_thread
from pydantic import TypeAdapter, ValidationError

from .._core.decisions import Expired, Provide, Skip
from .._core.finite import json_storable
from .._core.inputs import InputSchema, RequestInput, input_problems, input_schema
from .._core.model_text import model_text
from .._core.steps import StepJournal, StepScope, memory_journal
from ..exceptions import ConfigError, InvalidDecision, NotReady, RunConflict, SchemaMismatch
from ._graph import DEFAULT, END, CompiledNode, Route, RouteKey, Workflow, WorkflowContext
from ._state import (
    AgentNodeCall,
    AgentNodeRunner,
    AgentPaused,
    FinishedNode,
    GivenAnswer,
    InputSkipped,
    PendingInput,
    RecordedAnswer,
    SkippedAnswer,
    WorkflowFailed,
    WorkflowFinished,
    WorkflowOutcome,
    WorkflowPaused,
    WorkflowPersistence,
    WorkflowState,
)


@dataclass(frozen=True, kw_only=True)
class _Done:
    output: Any
    data: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class _Paused:
    input: PendingInput | None = None
    agent: AgentPaused | None = None
    answers: tuple[RecordedAnswer, ...] = ()


class NodeFailed(Exception):
    """A node's failure in plain words (a route it lacks, its own code's): the run's error is the message alone."""


_NOTHING: Any = object()


class WorkflowEngine:
    """Runs one workflow from saved states; holds nothing about any run between calls.

    Args:
        workflow: the graph to run.
        persistence: where each state is saved.
        agents: runs agent nodes; required when the workflow has any.
        max_steps: how many nodes one call may run before the run fails (a loop that never
            waits for anyone would otherwise run forever).
        journal: where the steps nodes take (`ctx.step`) are recorded; by default in this
            engine's memory (the runtime gives its store's).

    Raises:
        ConfigError: the workflow has agent nodes and no runner was given.
    """

    def __init__(
        self,
        workflow: Workflow,
        *,
        persistence: WorkflowPersistence,
        agents: AgentNodeRunner | None = None,
        max_steps: int = 1000,
        journal: StepJournal | None = None,
    ) -> None:
        if workflow.agent_nodes and agents is None:
            raise ConfigError(
                f"workflow {workflow.name!r} has agent node(s) {', '.join(workflow.agent_nodes)}; "
                "the engine needs an AgentNodeRunner to run them"
            )
        self.workflow = workflow
        self._persistence = persistence
        self._agents = agents
        self._max_steps = max_steps
        self._journal: StepJournal = journal if journal is not None else memory_journal()

    async def start(self, run_id: str, node_input: Any = None, *, principal: str | None = None) -> WorkflowOutcome:
        """Start a run: `node_input` goes to the first node. The state is saved before any node runs."""
        state = WorkflowState(
            run_id=run_id,
            workflow=self.workflow.name,
            principal=principal,
            node=self.workflow.first,
            node_input=_json(node_input, "the workflow's input"),
        )
        await self._persistence.save(state)
        return await self._advance(state)

    async def resume(self, state: WorkflowState, decision: Provide | Skip | Expired | None = None) -> WorkflowOutcome:
        """Carry a run on from `state`: with the answer to the question it waits on, or none.

        A skipped or expired question raises `InputSkipped` in the node at its `yield`.

        Without a decision this carries on a run paused on an agent node (whose requests were
        decided on the agent's run), retries the failed node, or redoes the node a crashed
        process was running.

        Raises:
            InvalidDecision: the answer does not fit the question's schema (the message names
                each field); nothing changed and the question is still open.
            NotReady: the run waits on a question and no decision was given.
            RunConflict: the run has completed, or a decision was given where none is asked for.
        """
        if state.workflow != self.workflow.name:
            raise RunConflict(state.run_id, f"the state is of workflow {state.workflow!r}, not {self.workflow.name!r}")
        if state.status == "completed":
            raise RunConflict(state.run_id, "the workflow run has completed; there is nothing to resume")
        if state.status == "paused" and state.pending is not None:
            pending = state.pending
            if decision is None:
                raise NotReady(
                    state.run_id, f"node {pending.node!r} waits for input; answer with Provide(value=...) or Skip()"
                )
            if isinstance(decision, Provide):
                if problems := input_problems(pending.response_schema, decision.value):
                    raise InvalidDecision(pending.key, "; ".join(problems))
                answer: RecordedAnswer = GivenAnswer(value=decision.value)
            elif isinstance(decision, Skip):
                answer = SkippedAnswer(reason=decision.reason)
            else:
                answer = SkippedAnswer(reason=model_text(decision), expired=True)
            state = replace(state, answers=(*state.answers, answer))
        elif decision is not None:
            where = "an agent node's requests, decided on the agent's run" if state.status == "paused" else "nothing"
            raise RunConflict(state.run_id, f"the run waits on {where}; it takes no {decision.kind!r} decision")
        state = replace(state, status="running", pending=None, error=None)
        await self._persistence.save(state)
        return await self._advance(state)

    async def _advance(self, state: WorkflowState) -> WorkflowOutcome:
        for _ in range(self._max_steps):
            assert state.node is not None
            node = self._node(state)
            try:
                step = await self._run(node, state)
                if isinstance(step, _Done):
                    route, output = _settle(node, step.output)
                    target = self._successor(node, route, output)
            except InputSkipped as exc:
                return await self._fail(replace(state, answers=state.answers[: exc.index]), node, exc)
            except Exception as exc:  # a node is user code: whatever it raises fails the run, naming the node
                return await self._fail(state, node, exc)
            if isinstance(step, _Paused):
                # Saved outside the `try`: a store that fails stops the engine, it does not fail the node.
                state = replace(
                    state,
                    status="paused",
                    answers=step.answers,
                    pending=step.input,
                    agent_handle=step.agent.handle if step.agent else None,
                )
                await self._persistence.save(state)
                return WorkflowPaused(state=state, node=node.name, input=step.input, agent=step.agent)
            state = replace(
                state,
                finished=(*state.finished, FinishedNode(node=node.name, output=output, route=route)),
                answers=(),
                agent_handle=None,
                data=step.data,
            )
            if target == END:
                state = replace(state, status="completed", node=None, node_input=None, output=output)
                await self._persistence.save(state)
                return WorkflowFinished(state=state, output=output)
            state = replace(state, status="running", node=target, node_input=output)
            await self._persistence.save(state)
        assert state.node is not None
        return await self._fail(
            state,
            self._node(state),
            NodeFailed(f"the run went through {self._max_steps} nodes without stopping; does a loop never exit?"),
        )

    def _node(self, state: WorkflowState) -> CompiledNode:
        assert state.node is not None
        try:
            return self.workflow.nodes[state.node]
        except KeyError:
            raise RunConflict(
                state.run_id, f"workflow {self.workflow.name!r} has no node {state.node!r} any more; the graph changed"
            ) from None

    async def _fail(self, state: WorkflowState, node: CompiledNode, exc: Exception) -> WorkflowFailed:
        why = str(exc) if isinstance(exc, NodeFailed) else f"{type(exc).__name__}: {exc}"
        error = f"node {node.name!r} failed: {why}"
        state = replace(state, status="failed", pending=None, agent_handle=None, error=error)
        await self._persistence.save(state)
        return WorkflowFailed(state=state, node=node.name, error=error)

    async def _run(self, node: CompiledNode, state: WorkflowState) -> _Done | _Paused:
        if node.kind == "agent":
            return await self._run_agent(node, state)
        assert node.fn is not None
        data = copy.deepcopy(state.data)
        kwargs: dict[str, Any] = {}
        if node.takes_input:
            kwargs["node_input"] = _coerce_input(node, state.node_input)
        if node.takes_ctx:
            visit = state.visits(node.name) + 1
            kwargs["ctx"] = WorkflowContext(
                run_id=state.run_id,
                workflow=state.workflow,
                node=node.name,
                visit=visit,
                principal=state.principal,
                state=data,
                outputs=MappingProxyType({f.node: f.output for f in state.finished}),
                steps=StepScope(
                    run_id=state.run_id,
                    scope=f"{node.name}:{visit}",
                    journal=self._journal,
                    offload=anyio.to_thread.run_sync,
                ),
            )
        if inspect.iscoroutinefunction(node.fn) or inspect.isasyncgenfunction(node.fn):
            result = node.fn(**kwargs)
        else:
            # In a worker thread, as pydantic-ai runs plain tools: a slow one must not stop the event loop (the lease,
            # the write of the nodes before it).
            result = await anyio.to_thread.run_sync(functools.partial(node.fn, **kwargs))
        if inspect.isawaitable(result):
            result = await result
        if inspect.isasyncgen(result):
            return await self._drive(node, state, _AsyncDriver(result), data)
        if inspect.isgenerator(result):
            return await self._drive(node, state, _SyncDriver(result), data)
        return _Done(output=result, data=data)

    async def _drive(
        self, node: CompiledNode, state: WorkflowState, gen: _Driver, data: dict[str, Any]
    ) -> _Done | _Paused:
        """Run a generator node, answering its questions from `state.answers` (a replay) until it asks a new one."""
        answers = state.answers
        index = 0
        result: Any = _NOTHING
        last_answer: Any = _NOTHING
        try:
            item = await gen.send(None)
            while True:
                if not isinstance(item, RequestInput):
                    result = item
                    item = await gen.send(None)
                    continue
                schema = input_schema(item.response_schema)
                if index == len(answers):
                    return _Paused(input=_pending(node, state, index, item, schema), answers=answers)
                recorded = answers[index]
                if isinstance(recorded, SkippedAnswer):
                    index += 1
                    skipped = InputSkipped(node.name, recorded.reason, index=index - 1, expired=recorded.expired)
                    item = await gen.throw(skipped)
                    continue
                try:
                    value = schema.validate(recorded.value)
                except SchemaMismatch as exc:
                    # The JSON Schema let it through but the node's own type did not: ask again.
                    return _Paused(
                        input=_pending(node, state, index, item, schema, refused=exc.problems), answers=answers[:index]
                    )
                index += 1
                last_answer = value
                item = await gen.send(value)
        except _Stopped as stop:
            if stop.value is not None:
                result = stop.value
        finally:
            await gen.close()
        if index < len(answers):
            raise NodeFailed(
                f"the node asked {index} question(s) on replay but {len(answers)} were answered; "
                "a node must ask the same questions in the same order each time it runs"
            )
        if result is _NOTHING:
            result = None if last_answer is _NOTHING else last_answer
        return _Done(output=result, data=data)

    async def _run_agent(self, node: CompiledNode, state: WorkflowState) -> _Done | _Paused:
        assert node.agent is not None and self._agents is not None
        call = AgentNodeCall(
            run_id=state.run_id,
            workflow=state.workflow,
            node=node.name,
            agent=node.agent.agent,
            prompt=agent_prompt(state.node_input),
            node_input=state.node_input,
            visit=state.visits(node.name) + 1,
            principal=state.principal,
            output_type=node.agent.output_type,
        )
        if state.agent_handle is None:
            outcome = await self._agents.start(call)
        else:
            outcome = await self._agents.resume(call, state.agent_handle)
        if isinstance(outcome, AgentPaused):
            return _Paused(agent=outcome)
        output = outcome.output
        if node.output_adapter is not None:
            output = _validate(node.output_adapter, output)
        return _Done(output=output, data=state.data)

    def _successor(self, node: CompiledNode, route: RouteKey | None, output: Any) -> str:
        successors = self.workflow.successors.get(node.name)
        if successors is None:
            return END
        routes = successors.routes
        if route is not None:
            if route in routes:
                return routes[route]
            if isinstance(route, str) and route in successors.targets():
                return route
            if DEFAULT in routes:
                return routes[DEFAULT]
            raise NodeFailed(
                f"it chose route {route!r}, which it does not have ({_ways(successors.targets(), routes)})"
            )
        if isinstance(output, str | int | bool) and output in routes:
            return routes[output]
        if successors.plain:
            return successors.plain[0]
        if DEFAULT in routes:
            return routes[DEFAULT]
        raise NodeFailed(
            f"it returned {output!r}, which matches none of its routes ({_ways((), routes)}); "
            "return Route(...) or add a DEFAULT route"
        )


def agent_prompt(node_input: Any) -> str:
    """An agent node's prompt: a text input as is, anything else as JSON."""
    if isinstance(node_input, str):
        return node_input
    if node_input is None:
        return ""
    return json.dumps(node_input, ensure_ascii=False)


def _ways(targets: tuple[str, ...], routes: Mapping[RouteKey, str]) -> str:
    keys = [f"{k!r}" for k in routes] + [repr(t) for t in targets if t not in routes.values()]
    return "routes: " + ", ".join(keys) if keys else "no routes"


def _pending(
    node: CompiledNode,
    state: WorkflowState,
    index: int,
    ask: RequestInput,
    schema: InputSchema,
    *,
    refused: tuple[str, ...] = (),
) -> PendingInput:
    return PendingInput(
        key=f"{node.name}:{state.visits(node.name) + 1}:{index + 1}",
        node=node.name,
        message=ask.message,
        payload=_json(ask.payload, "the payload of RequestInput"),
        response_schema=schema.json_schema,
        refused=refused,
    )


def _settle(node: CompiledNode, output: Any) -> tuple[RouteKey | None, Any]:
    if isinstance(output, Route):
        return output.route, _json(output.output, "the output of its Route")
    return None, _json(output, "its output")


def _json(value: Any, what: str) -> Any:
    try:
        return json_storable(value)  # text a lone surrogate spoils is kept with U+FFFD, as every store keeps it
    except (TypeError, ValueError) as exc:
        raise NodeFailed(f"{what} cannot be stored as JSON: {exc}") from None


def _coerce_input(node: CompiledNode, value: Any) -> Any:
    if node.input_adapter is None:
        return value
    return _validate(node.input_adapter, value)


def _validate(adapter: TypeAdapter[Any], value: Any) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError:
        if not isinstance(value, str):
            raise
    # Agents answer in text; text that does not fit a structured type is read as JSON.
    return adapter.validate_json(value)


# generators, sync or async, behind one interface


class _Stopped(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Driver(Protocol):
    async def send(self, value: Any) -> Any: ...
    async def throw(self, exc: BaseException) -> Any: ...
    async def close(self) -> None: ...


class _AsyncDriver:
    def __init__(self, gen: AsyncGenerator[Any, Any]) -> None:
        self._gen = gen

    async def send(self, value: Any) -> Any:
        try:
            return await self._gen.asend(value)
        except StopAsyncIteration:
            raise _Stopped(None) from None

    async def throw(self, exc: BaseException) -> Any:
        try:
            return await self._gen.athrow(exc)
        except StopAsyncIteration:
            raise _Stopped(None) from None

    async def close(self) -> None:
        await self._gen.aclose()


class _SyncDriver:  # stepped in a worker thread: the code between two `yield`s may take its time too
    def __init__(self, gen: Generator[Any, Any, Any]) -> None:
        self._gen = gen

    async def send(self, value: Any) -> Any:
        return await self._step(self._gen.send, value)

    async def throw(self, exc: BaseException) -> Any:
        return await self._step(self._gen.throw, exc)

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self._gen.close)

    @staticmethod
    async def _step(step: Callable[[Any], Any], arg: Any) -> Any:
        def call() -> Any:  # caught in the thread: a StopIteration raised through a coroutine becomes a RuntimeError
            try:
                return step(arg)
            except StopIteration as stop:
                return _Stopped(stop.value)

        if isinstance(result := await anyio.to_thread.run_sync(call), _Stopped):
            raise result
        return result
