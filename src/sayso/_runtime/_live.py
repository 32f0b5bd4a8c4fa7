"""Live MCP calls: the runtime's `McpHost`, in which a call whose server asked the person stays open.

See docs/guides/mcp.md#when-a-server-asks-the-person.

While the runtime is open (`sayso serve`, `sayso chat`, `sayso run`, a Python program), every MCP
call of its agents runs in one host task group that outlives the runs. A form or URL a server
pushes mid-call pauses the run while the call stays blocked; the resumed run, in this process,
hands the person's answer back on it. Decisions that close such a question without an answer (a
skip when the person sends a message instead, a cancelled run, an expiry) tell the blocked call
"cancel" at once, so the server is not left waiting.

A form only this process can deliver (`_holds`) keeps its run held here: `Holder` renews each hold,
looks for answers given in any process and carries the run on here, where the call is; it closes
the call when the form was closed elsewhere. A form whose call ended while it waited (the server
dropped it) is closed as cancelled and its run carried on here. When the runtime closes, every such
form is closed as cancelled first and its run carried on (the server hears cancel on the call), so none stays open
for an answer nobody could deliver; then the calls still open are cut.

On a Temporal worker (`Kernel.routes_held_calls`) the call is parked by a tool activity, whose
segment another worker may have saved the pause in, naming this runtime its keeper: the holder
finds such pauses by the calls parked here and holds them. It carries nothing on itself: the run's
workflow does, on any worker, and sends the resumed call here (`_temporal/_durable.py`), so a call
whose form a person answered stays parked until that call takes it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskGroup

from .._core.deciding import closed_by_sayso, needs_holder
from .._core.decisions import DecisionRecord
from .._core.pauses import PauseState
from .._core.requests import Request
from .._core.resume import open_requests
from ..exceptions import SaysoError
from . import _tree
from ._cycle import Cycle
from ._events import EventData, RequestEvent
from ._holds import POLL_SECONDS, close_forms
from ._results import RunResult
from ._verbs.resume import resume_if_ready

if TYPE_CHECKING:
    from .._engine.mcp.calls import McpHost

logger = logging.getLogger("sayso.mcp")

_CLOSING = frozenset({"skip", "expired"})
"""Decisions that close a question without an answer: nothing resumes the call to hand one back."""

CLOSE_SECONDS = 10.0
"""How long a closing runtime gives the runs of the forms it closed to carry on before it cuts them."""


class Holder:
    """The pauses this runtime holds (`Kernel.held`): renewed, watched for answers, carried on here."""

    def __init__(self, c: Cycle, host: McpHost) -> None:
        self.c = c
        self.host = host
        self.carrying: set[str] = set()
        """Held runs this holder is carrying on right now (answered; their resume is under way)."""
        self._changed = anyio.Event()
        self._group: TaskGroup | None = None
        self.carry_on: Callable[[str], Awaitable[None]] = self._resume_here
        """How a closing runtime carries on a run whose forms it closed: here, or (on a worker) in its workflow."""

    async def watch(self) -> None:
        """Look at every held pause a few times a second and renew the holds every third of a lease (a host task)."""
        k = self.c.k
        renewed = anyio.current_time()
        async with anyio.create_task_group() as group:
            self._group = group
            while True:
                await anyio.sleep(POLL_SECONDS)
                renew = anyio.current_time() - renewed >= k.lease_seconds / 3
                if renew:
                    renewed = anyio.current_time()
                if k.routes_held_calls:
                    await self._adopt()
                for run_id, pause_id in list(k.held.items()):
                    try:
                        await self._look(run_id, pause_id, renew=renew)
                    except SaysoError:
                        logger.warning("could not look at the held pause of run %s", run_id, exc_info=True)
                self._changed.set()
                self._changed = anyio.Event()

    async def _adopt(self) -> None:
        """Hold the pauses another runtime saved as this one's to keep: their calls are parked here.

        A call parked for a run that ended meanwhile (its form answered by nobody) hears cancel.
        """
        k = self.c.k
        for key in [key for key in self.host.parked if key[0] not in k.held]:
            try:
                run = await k.store.get_run(key[0])
            except SaysoError:
                logger.warning("could not read run %s, whose call is parked here", key[0], exc_info=True)
                continue
            if run.status == "paused" and run.pause_id is not None and run.lease_holder == k.holder:
                k.held[run.run_id] = run.pause_id
            elif run.status in ("completed", "failed", "cancelled"):
                self.host.close_question(key)

    async def _look(self, run_id: str, pause_id: str, *, renew: bool) -> None:
        k = self.c.k
        run = await k.store.get_run(run_id)
        if run.pause_id == pause_id and run.lease_holder == k.holder and renew:
            if not await k.store.renew_lease(run_id, k.holder, k.clock() + k.lease_seconds):
                run = await k.store.get_run(run_id)
        if run.pause_id != pause_id or run.lease_holder != k.holder:
            if k.held.get(run_id) == pause_id:  # not a later pause of the run, held since
                del k.held[run_id]
            if not (run.status == "running" and run.lease_holder == k.holder):
                # Closed elsewhere (a new message, a cancel, a forced resume, or this holder thought gone):
                # the calls this pause parked hear cancel (one this runtime's own resume took is gone already;
                # one a person answered, on a worker, waits for its resumed call, sent here).
                state = await k.store.pause_state(pause_id)
                for request in state.requests:
                    if not (k.routes_held_calls and _answered(state.decisions.get(request.request_id))):
                        self.host.close_question((run_id, request.tool_call_id))
            return
        state = await k.store.pause_state(pause_id)
        if not k.routes_held_calls and (dropped := self._dropped(run_id, state)):
            # The server ended the call while its form waited: no answer could reach it, so the form closes
            # and the run carries on here (the model reads how the call ended).
            await close_forms(k, dropped)
            state = await k.store.pause_state(pause_id)
        if open_requests(state.requests, state.decisions) or k.routes_held_calls:
            return  # still open; or answered on a worker, whose run's workflow carries it on
        # Answered, in whichever process: the run is carried on here, where its call waits.
        if k.held.get(run_id) != pause_id:
            return
        del k.held[run_id]
        self.carrying.add(run_id)
        assert self._group is not None
        self._group.start_soon(self._carry_on, run_id)

    def _dropped(self, run_id: str, state: PauseState) -> list[Request]:
        """The open forms of a held pause whose call ended while they waited (its server dropped it)."""
        return [
            r
            for r in open_requests(state.requests, state.decisions)
            if needs_holder(r) and (run_id, r.tool_call_id) in self.host.ended
        ]

    async def _resume_here(self, run_id: str) -> None:
        k = self.c.k
        await resume_if_ready(self.c, await _tree.root(k, await k.store.get_run(run_id)))

    async def _carry_on(self, run_id: str) -> None:
        try:
            await self._resume_here(run_id)
        except SaysoError:
            logger.warning("could not carry on run %s after its form was answered", run_id, exc_info=True)
        finally:
            self.carrying.discard(run_id)
            self._changed.set()
            self._changed = anyio.Event()

    async def hold(self, run_id: str) -> RunResult:
        """Wait while the run waits on forms this runtime holds; where it stands once they were answered and it moved.

        Returns at once when it waits on none; else once it left that pause and is not running.
        """
        k = self.c.k
        result = await _tree.result(k, run_id)
        asked = {r.request_id for r in result.requests}
        while result.status == "running" or (
            {r.request_id for r in result.requests} == asked and any(r.run_id in k.held for r in result.requests)
        ):
            await self._changed.wait()
            result = await _tree.result(k, run_id)
        while any(r in self.carrying for r in {run_id, *(r.run_id for r in result.requests)}):
            await self._changed.wait()
            result = await _tree.result(k, run_id)
        return result

    async def close_all(self) -> None:
        """The runtime closes: every form it holds is closed as cancelled, then its run carried on (bounded)."""
        k = self.c.k
        held = dict(k.held)
        k.held.clear()
        for pause_id in held.values():
            state = await k.store.pause_state(pause_id)
            await close_forms(k, [r for r in open_requests(state.requests, state.decisions) if needs_holder(r)])
        with anyio.move_on_after(CLOSE_SECONDS):
            for run_id in held:
                try:
                    await self.carry_on(run_id)
                except SaysoError:
                    logger.warning("could not carry on run %s after closing its form", run_id, exc_info=True)


def _answered(record: DecisionRecord | None) -> bool:
    """Whether a decision is the person's answer to a form, which a resumed call hands back to the server."""
    return (
        record is not None and record.decision.kind in ("accept", "decline", "cancel") and not closed_by_sayso(record)
    )


async def open_mcp_host(c: Cycle) -> tuple[AsyncExitStack, Holder | None]:
    """Open one MCP host for every agent with MCP servers; closing the returned stack cuts the calls still open."""
    k = c.k
    stack = AsyncExitStack()
    toolsets = [built.mcp for built in k.agents.values() if built.mcp is not None]
    if not toolsets:
        return stack, None
    from .._engine.mcp.calls import McpHost  # the `mcp` extra is needed only by agents that bind MCP servers

    host = await stack.enter_async_context(McpHost(keeps_calls=True, holder=k.holder))

    def close_unanswered(event: RequestEvent, data: EventData) -> None:
        request = data["request"]
        if request["kind"] != "elicitation" or request["durable"]:
            return
        if event == "request.expired" or ("decision" in data and data["decision"].get("kind") in _CLOSING):
            host.close_question((request["run_id"], request["tool_call_id"]))

    for toolset in toolsets:
        toolset.host = host
    k.events.listeners.append(close_unanswered)

    def detach() -> None:
        k.events.listeners.remove(close_unanswered)
        for toolset in toolsets:
            toolset.host = None

    stack.callback(detach)
    holder = Holder(c, host)
    stack.push_async_callback(holder.close_all)
    group = await stack.enter_async_context(anyio.create_task_group())
    group.start_soon(holder.watch)
    stack.callback(group.cancel_scope.cancel)
    return stack, holder
