"""`TemporalFront`: the `Engine` of a front process — runs handed to their workflows, decisions to their Updates.

A front (`sayso serve`, or any `Sayso` whose config says `engine: temporal`) keeps nothing of a
run: it starts the run in the store, starts its workflow (`sayso-<agent>-<run id>`) and waits
for the `settled` Update; a decision goes to the `decide` Update of the run's top-level workflow,
whose validator refuses a wrong answer before anything is recorded. Every front is alike, so any
number of them serve the same runs. A call with a text sink (`on_text`) hears the run's text as
the model writes it on a worker: the front reads it from the workflow while its Update waits (`_text`).
"""

from __future__ import annotations

import secrets
from typing import Any

import anyio
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError, WorkflowUpdateStage
from temporalio.service import RPCError

from .._config.engine import TemporalConfig
from .._core.decisions import DECISION_ADAPTER
from .._runtime._runner import CallOptions, DecisionCall
from .._store import RunRecord
from ..exceptions import RunConflict, StoreError
from ._shapes import (
    RUN_WORKFLOW,
    AdvanceInput,
    DecideInput,
    RunInput,
    cancelled_as_cancelled,
    error_in,
    options_json,
    principal_json,
    workflow_id,
)
from ._text import listening


class TemporalFront:
    """Runs as Temporal workflows on the cluster a config names; connected on first use."""

    def __init__(self, settings: TemporalConfig) -> None:
        self._settings = settings
        self._client: Client | None = None
        self._connecting = anyio.Lock()

    async def start(self, run: RunRecord, options: CallOptions) -> None:
        client = await self._connect()
        text = _token(options)
        start = RunInput(
            run_id=run.run_id,
            handed_by=run.lease_holder,
            options=options_json(options, text=text),
            heartbeat_seconds=self._settings.heartbeat_seconds,
        )
        handle = await client.start_workflow(
            RUN_WORKFLOW, start, id=workflow_id(run), task_queue=self._settings.task_queue
        )
        await self._update(run, handle, "settled", None, options, text)

    async def advance(self, top: RunRecord, *, force: bool, options: CallOptions) -> None:
        text = _token(options)
        asked = AdvanceInput(run_id=top.run_id, force=force, options=options_json(options, text=text))
        await self._update(top, await self._handle(top), "advance", asked, options, text)

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
        return bool(await self._update(top, await self._handle(top), "decide", asked, options, text))

    async def changed(self, top: RunRecord) -> None:
        try:
            await (await self._handle(top)).signal("changed")
        except RPCError:
            pass  # its workflow has ended already: nothing waits on the store

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
    ) -> object:
        """Run an Update of the run's workflow; a sayso error a worker or the validator raised is raised here.

        With a text sink, the Update is sent and, once the workflow accepted it (so it keeps the call's
        text), the front listens to the text until the call ended; without one, nothing but the Update.
        """
        args = [] if arg is None else [arg]
        try:
            with cancelled_as_cancelled():
                if text is None:
                    return await handle.execute_update(name, args=args)
                sent = await handle.start_update(name, args=args, wait_for_stage=WorkflowUpdateStage.ACCEPTED)
                async with listening(handle, text, options.on_text):
                    return await sent.result()
        except WorkflowUpdateFailedError as exc:
            raise error_in(exc.cause) or RunConflict(run.run_id, f"its workflow failed: {exc.cause}") from None
        except RPCError as exc:
            raise RunConflict(run.run_id, f"its workflow {handle.id!r} cannot take this: {exc.message}") from None

    async def _handle(self, top: RunRecord) -> WorkflowHandle[Any, Any]:
        return (await self._connect()).get_workflow_handle(workflow_id(top))

    async def _connect(self) -> Client:
        async with self._connecting:
            if self._client is None:
                try:
                    self._client = await Client.connect(self._settings.address, namespace=self._settings.namespace)
                except RuntimeError as exc:
                    raise StoreError(f"cannot reach Temporal at {self._settings.address}: {exc}") from exc
            return self._client


def _token(options: CallOptions) -> str | None:
    """The token a call's text is kept under in its run's workflow, when the caller hears the text."""
    return None if options.on_text is None else f"text-{secrets.token_hex(8)}"
