"""`Kernel`: what every part of the runtime shares — config, agents, store, clock, lease holder, events.

The runtime is split by concept (one engine step, the delegate tree, remote delegates, leases,
events, deciding); each part is a set of functions over this one object instead of methods of
one large class, so each module can be read on its own. The kernel knows no runner: which kind of
run goes how is the cycle's (`_cycle`), which sits above it.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from .._config.file import Config
from .._core.access import Principal
from .._core.limits import Limits
from .._core.requests import ClientTool
from .._store import RunRecord, RunStart, RunStore, new_holder
from ..exceptions import AgentNotFound, StoreError
from ._events import Events
from ._heartbeat import Heartbeat
from ._journal import RunJournal
from ._listing import principal_of

if TYPE_CHECKING:
    from .._engine.agents import BuiltAgent
    from ._runner import AgentLoop  # the runner seam (pydantic-ai) only a running runtime loads

logger = logging.getLogger("sayso.leases")


def new_id(prefix: str) -> str:
    """An unguessable id: 128 random bits, URL-safe, with a readable prefix."""
    return f"{prefix}_{secrets.token_urlsafe(16)}"


def derived_id(prefix: str, seed: str) -> str:
    """An id a caller finds again from what it knows (`seed`): as unguessable as the random ids `seed` holds."""
    digest = hashlib.sha256(seed.encode()).digest()[:16]
    return f"{prefix}_{base64.urlsafe_b64encode(digest).rstrip(b'=').decode()}"


@dataclass
class Working:
    """A run segment executing in this runtime: the scope that stops it, and when it has stopped."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)


@dataclass(kw_only=True)
class Kernel:
    """The state one `Sayso` runtime shares between its parts; nothing in it belongs to one run."""

    config: Config
    store: RunStore
    agents: dict[str, BuiltAgent]
    clock: Callable[[], float]
    lease_seconds: float
    holder: str = field(default_factory=new_holder)
    """This runtime as the holder of the leases of the runs it is working on (the store's `lease_holder`)."""
    events: Events = field(default_factory=lambda: Events())
    heartbeat: Heartbeat = field(init=False)
    """Renews the leases of the runs this runtime works on: one timer for all of them."""
    working: dict[str, Working] = field(default_factory=dict[str, "Working"])
    """The runs this runtime is executing right now, so `Sayso.cancel` can stop one."""
    cancelling: set[str] = field(default_factory=set[str])
    """Top-level runs asked to stop: their segments (and their delegates') end as cancelled."""
    held: dict[str, str] = field(default_factory=dict[str, str])
    """Paused runs this runtime holds, by run id: their pause (its id) waits on a live MCP call parked here that
    only this runtime can answer; `_live` renews each hold and carries the run on once it is answered."""
    routes_held_calls: bool = False
    """A held form's resumed call is sent to the runtime holding it wherever the run is carried on (a Temporal
    worker's tool activity runs on its holder's own task queue): any runtime carries such a run on, none waits
    for the holder to, and a holder only renews its holds (`_live`)."""

    loop: AgentLoop | None = None
    """Where agent segments' loops run when not here: a Temporal worker's durable agent loop (`sayso._temporal`)."""

    journal: RunJournal = field(init=False)
    """Where the steps (`sayso.step`) of the tools and nodes it runs are recorded: the store, or an executor's."""

    def __post_init__(self) -> None:
        self.journal = RunJournal(self.store, self.clock)
        self.heartbeat = Heartbeat(self._renew, every=lambda: self.lease_seconds / 3)

    async def _renew(self, run_ids: list[str]) -> None:
        for run_id in run_ids:
            try:
                await self.store.renew_lease(run_id, self.holder, self.clock() + self.lease_seconds)
            except StoreError:
                # The run's next write checks the lease itself: a lapsed lease fails it there.
                logger.warning("could not renew the lease of run %s", run_id, exc_info=True)

    def run_start(
        self,
        *,
        thread_id: str,
        owner: str,
        agent: str,
        prompt: str,
        now: float,
        run_id: str | None = None,
        client_tools: Sequence[ClientTool] = (),
        below: tuple[RunRecord, str, str] | None = None,
    ) -> RunStart:
        """A run this runtime starts, held under its lease from `now` (a new id unless the caller named one).

        `below` is the run, call id and agent path of the call a run below another started from.
        """
        parent, call_id, agent_path = below if below is not None else (None, None, None)
        return RunStart(
            thread_id=thread_id,
            owner=owner,
            agent=agent,
            run_id=run_id or new_id("run"),
            prompt=prompt,
            client_tools=client_tools,
            lease_holder=self.holder,
            lease_expires_at=now + self.lease_seconds,
            now=now,
            parent_run_id=parent.run_id if parent is not None else None,
            parent_call_id=call_id,
            agent_path=agent_path,
        )

    def start_working(self, run_id: str) -> Working:
        """Register a run this runtime starts executing."""
        working = Working()
        self.working[run_id] = working
        return working

    def stop_working(self, run_id: str) -> None:
        """The run's segment ended (paused, finished, failed or cancelled)."""
        working = self.working.pop(run_id, None)
        if working is not None:
            working.done.set()

    @property
    def limits(self) -> Limits:
        """The configured sizes of messages, edits and answers."""
        return self.config.limits.to_limits()

    def principal(self, name: str) -> Principal:
        """The principal a name stands for: its configured approver role, or the local caller in local mode."""
        return principal_of(self.config, name)

    def built(self, name: str) -> BuiltAgent:
        """The built agent called `name`.

        Raises:
            AgentNotFound: no agent has that name.
        """
        try:
            return self.agents[name]
        except KeyError:
            raise AgentNotFound(name, known=tuple(self.agents)) from None
