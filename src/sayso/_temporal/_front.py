"""`TemporalFront`: the `Engine` of a front process — runs handed to their workflows, decisions to their Updates.

A front (`sayso serve`, or any `Sayso` whose config says `engine: temporal`) keeps nothing of a
run: it starts the run in the store, starts its workflow (`sayso-<agent>-<run id>`) and waits
for the `settled` Update; a decision goes to the `decide` Update of the run's top-level workflow,
whose validator refuses a wrong answer before anything is recorded. Every front is alike, so any
number of them serve the same runs. A call with a text sink (`on_text`) hears the run's text as
the model writes it on a worker: the front reads it from the workflow while its Update waits (`_text`).

What the front cannot get to the cluster is a `StoreError` naming Temporal (HTTP 503, exit 5), never
a `RunConflict` of the run: nothing listens at the address, the namespace is missing, the cluster
stops answering, or no worker takes the call up. A workflow is started, or an Update sent, only once
a worker is seen polling the task queue (a worker must take an Update up for it to be accepted: one
sent to a queue nobody polls waited for good), and an Update no worker took up within
`accept_seconds` is given up on, saying that it may still be applied.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import anyio
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.service import RPCError, RPCStatusCode

from .._config.engine import TemporalConfig
from .._core.decisions import DECISION_ADAPTER
from .._runtime._runner import CallOptions, DecisionCall
from .._store import RunRecord
from ..exceptions import RunConflict, SaysoError, StoreError
from ._asking import PASSING, cancelled_as_cancelled
from ._shapes import (
    RUN_WORKFLOW,
    AdvanceInput,
    DecideInput,
    RunInput,
    error_in,
    options_json,
    principal_json,
    workflow_id,
)
from ._text import listening

POLLED_FRESH_SECONDS = 10.0
"""How long a front takes a worker it saw polling the task queue to be there still, without asking again."""

REACH_SECONDS = 5.0
"""How long `sayso check` waits for the cluster to answer, as it waits for the store."""

POLLER_GRACE_SECONDS = 2.0
"""How long a front asks again for a worker on the task queue before it says none polls it."""

_OUT_OF_REACH = PASSING | {RPCStatusCode.CANCELLED, RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.PERMISSION_DENIED}
"""The answers of a cluster that is out of reach (or lets this front in no more), not of a workflow refusing."""


class TemporalFront:
    """Runs as Temporal workflows on the cluster a config names; connected on first use."""

    def __init__(self, settings: TemporalConfig) -> None:
        self._settings = settings
        self._client: Client | None = None
        self._connecting = anyio.Lock()
        self._polled_at = -POLLED_FRESH_SECONDS
        """When a worker was last seen polling the task queue (`time.monotonic`)."""

    async def start(self, run: RunRecord, options: CallOptions) -> None:
        client = await self._polled()
        text = _token(options)
        start = RunInput(
            run_id=run.run_id,
            handed_by=run.lease_holder,
            options=options_json(options, text=text),
            heartbeat_seconds=self._settings.heartbeat_seconds,
        )
        try:
            handle = await client.start_workflow(
                RUN_WORKFLOW, start, id=workflow_id(run), task_queue=self._settings.task_queue
            )
        except RPCError as exc:
            raise self._failed(exc, run, workflow_id(run)) from None
        await self._update(run, handle, "settled", None, options, text, what=f"run {run.run_id!r}")

    async def advance(self, top: RunRecord, *, force: bool, options: CallOptions) -> None:
        text = _token(options)
        asked = AdvanceInput(run_id=top.run_id, force=force, options=options_json(options, text=text))
        await self._update(
            top, await self._handle(top), "advance", asked, options, text, what=f"the resume of run {top.run_id!r}"
        )

    async def decide(self, top: RunRecord, call: DecisionCall, options: CallOptions) -> bool:
        text = _token(options)
        asked = DecideInput(
            run_id=top.run_id,
            request_id=call.request_id,
            decision=DECISION_ADAPTER.dump_json(call.decision).decode(),
            principal=principal_json(call.principal),
            via=call.via,
            resume=call.resume,
            options=options_json(options, text=text),
        )
        what = f"the decision on request {call.request_id!r}"
        return bool(await self._update(top, await self._handle(top), "decide", asked, options, text, what=what))

    async def changed(self, top: RunRecord) -> None:
        try:
            await (await self._connect()).get_workflow_handle(workflow_id(top)).signal("changed")
        except RPCError:
            pass  # its workflow has ended already: nothing waits on the store

    async def started(self, top: RunRecord) -> bool:
        try:
            await (await self._connect()).get_workflow_handle(workflow_id(top)).describe()
        except RPCError as exc:
            if exc.status == RPCStatusCode.NOT_FOUND and self._out_of_reach(exc) is None:
                return False  # no workflow has its id
            raise self._failed(exc, top, workflow_id(top)) from None
        return True

    async def aclose(self) -> None:
        self._client = None  # the SDK's connection closes with the client object

    async def _update(
        self,
        run: RunRecord,
        handle: WorkflowHandle[Any, Any],
        name: str,
        arg: object,
        options: CallOptions,
        text: str | None,
        *,
        what: str,
    ) -> object:
        """Run an Update of the run's workflow; a sayso error a worker or the validator raised is raised here.

        The Update is sent and, once a worker took it up (the workflow accepted it, so it keeps the call's
        text), the front waits for its outcome, listening to the text until then when the call has a sink.
        """
        args = [] if arg is None else [arg]
        try:
            sent = await self._accepted(handle, name, args, what)
            with cancelled_as_cancelled():
                if text is None:
                    return await sent.result()
                async with listening(handle, text, options.on_text):
                    return await sent.result()
        except WorkflowUpdateFailedError as exc:
            raise error_in(exc.cause) or RunConflict(run.run_id, f"its workflow failed: {exc.cause}") from None
        except RPCError as exc:
            raise await self._refused(exc, run, handle) from None
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            said = f"Temporal at {self._settings.address} did not answer in time about {what}"
            raise StoreError(said, service="Temporal") from None

    async def _accepted(
        self, handle: WorkflowHandle[Any, Any], name: str, args: list[object], what: str
    ) -> WorkflowUpdateHandle[Any]:
        """The Update sent, once a worker took it up; `what` names it in the error when none did in time.

        An Update no worker takes up stays with the cluster, which hands it to the next worker that polls.

        Raises:
            StoreError: no worker took it up within `accept_seconds`.
        """
        seconds = self._settings.accept_seconds
        with anyio.move_on_after(seconds):
            with cancelled_as_cancelled():
                return await handle.start_update(name, args=args, wait_for_stage=WorkflowUpdateStage.ACCEPTED)
        self._polled_at = -POLLED_FRESH_SECONDS  # the worker seen may be gone: ask again next time
        raise StoreError(
            f"no worker took up {what} within {seconds:g} s on Temporal at {self._settings.address}: it was sent, "
            f"and it may still be recorded when a worker polls task queue {self._settings.task_queue!r}",
            service="Temporal",
        )

    async def _handle(self, top: RunRecord) -> WorkflowHandle[Any, Any]:
        return (await self._polled()).get_workflow_handle(workflow_id(top))

    async def _polled(self) -> Client:
        """The client, once a worker is seen polling the task queue (a sighting is taken for `POLLED_FRESH_SECONDS`).

        Asked again for `POLLER_GRACE_SECONDS` while none is listed: a worker started a moment ago polls
        soon. A worker that stopped is listed for a few minutes more, which the bounded wait for an
        Update's acceptance covers.

        Raises:
            StoreError: the cluster is out of reach, has no such namespace, or no worker polls the task queue.
        """
        client = await self._connect()
        if time.monotonic() - self._polled_at < POLLED_FRESH_SECONDS:
            return client
        given_up = time.monotonic() + POLLER_GRACE_SECONDS
        while not await self._pollers(client):
            if time.monotonic() >= given_up:
                raise StoreError(
                    f"no worker is polling task queue {self._settings.task_queue!r} on Temporal at "
                    f"{self._settings.address} (namespace {self._settings.namespace!r}): start `sayso worker` "
                    "with this config",
                    service="Temporal",
                )
            await anyio.sleep(0.2)
        self._polled_at = time.monotonic()
        return client

    async def reach(self, *, within: float = REACH_SECONDS) -> bool:
        """Whether a worker polls the task queue, once the cluster answered within `within` seconds (`sayso check`).

        Raises:
            StoreError: the cluster is out of reach, did not answer in time, or has no such namespace.
        """
        try:
            with anyio.fail_after(within):
                return await self._pollers(await self._connect())
        except TimeoutError:
            said = f"Temporal at {self._settings.address} did not answer within {within:g} seconds"
            raise StoreError(said, service="Temporal") from None

    async def _pollers(self, client: Client) -> bool:
        """Whether a worker polls the task queue: one cheap call, its pollers as the Temporal UI lists them.

        A cluster that does not say who polls (an older one, a role that may not ask) counts as polled:
        the bounded wait for an Update's acceptance still says when no worker takes it up.

        Raises:
            StoreError: the cluster is out of reach or has no such namespace.
        """
        asked = DescribeTaskQueueRequest(
            namespace=self._settings.namespace,
            task_queue=TaskQueue(name=self._settings.task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
        try:
            described = await client.workflow_service.describe_task_queue(asked, retry=True)
        except RPCError as exc:
            unreachable = self._out_of_reach(exc)
            if unreachable is not None:
                raise unreachable from None
            return True
        return bool(described.pollers)

    async def _refused(self, exc: RPCError, run: RunRecord, handle: WorkflowHandle[Any, Any]) -> SaysoError:
        """`_failed`, but a workflow that has closed says how, and what its run's person may do.

        The cluster says "workflow execution already completed" of any closed workflow; a run's requests
        are decided on the store when its workflow completed with it, so one that reaches here was cut off
        (terminated by an operator, timed out): nothing carries its run on any more.
        """
        failed = self._failed(exc, run, handle.id)
        if not isinstance(failed, RunConflict) or exc.status != RPCStatusCode.NOT_FOUND:
            return failed
        try:
            status = (await handle.describe()).status
        except RPCError:
            return failed
        if status is None or status == WorkflowExecutionStatus.RUNNING:
            return failed
        how = status.name.lower().replace("_", " ")
        return RunConflict(
            run.run_id,
            f"its workflow {handle.id!r} has ended on Temporal ({how}), so no worker carries this run on and its "
            "open requests cannot be decided any more; a new message on its thread starts over",
        )

    def _failed(self, exc: RPCError, run: RunRecord, workflow: str) -> SaysoError:
        """What a failed call about `run`'s workflow means: the cluster is out of reach, or the workflow refuses.

        The workflow refusing (it ended, or is not there) is a `RunConflict`; see `_out_of_reach` for the rest.
        """
        unreachable = self._out_of_reach(exc)
        if unreachable is not None:
            return unreachable
        return RunConflict(run.run_id, f"its workflow {workflow!r} cannot take this: {exc.message}")

    def _out_of_reach(self, exc: RPCError) -> StoreError | None:
        """A `StoreError` naming Temporal when the cluster is out of reach or has no such namespace, else `None`."""
        at = f"Temporal at {self._settings.address}"
        if any(detail.type_url.endswith(".NamespaceNotFoundFailure") for detail in exc.grpc_status.details):
            fix = "create it, or name one that exists (engine.temporal.namespace)"
            return StoreError(f"{at} has no namespace {self._settings.namespace!r}: {fix}", service="Temporal")
        if exc.status in _OUT_OF_REACH:
            return StoreError(f"{at} did not answer: {exc.message}", service="Temporal")
        return None

    async def _connect(self) -> Client:
        async with self._connecting:
            if self._client is None:
                try:
                    self._client = await Client.connect(self._settings.address, namespace=self._settings.namespace)
                except RuntimeError as exc:
                    raise StoreError(
                        f"cannot reach Temporal at {self._settings.address}: {exc}", service="Temporal"
                    ) from exc
            return self._client


def _token(options: CallOptions) -> str | None:
    """The token a call's text is kept under in its run's workflow, when the caller hears the text."""
    return None if options.on_text is None else f"text-{secrets.token_hex(8)}"
