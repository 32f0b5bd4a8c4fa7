"""kaboo's session state on the AG-UI state channel: a run's open requests and a reference to its pause.

With `runtime.persist_session_state` (on by default), every run ends with a `STATE_SNAPSHOT`
that keeps the host's own state keys and sets `kaboo_sessions`:

- `approvals`: the open requests, each as the interrupt the run finished with (a kaboo host draws
  its approval cards from them);
- `paused`: `{run_id, pause_id, thread_id, agent}` while the run waits, else `null`. The pause
  itself lives in sayso's store, so this reference is all any process needs to resume it.

A host that replays an older state cannot bring back a gate already answered: a resume whose
state names another pause than the one the thread waits on is refused, and nothing runs (a pause
of another thread is named as not this thread's, and nothing more is said of it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ag_ui.core import StateSnapshotEvent

from ..._core.requests import Request
from ..._runtime import RunRecord
from ...exceptions import InvalidInput
from ._mapping import Shown, interrupt, refused

SESSIONS_KEY = "kaboo_sessions"
"""The state key kaboo keeps its sessions under."""


def state_snapshot(host_state: Any, run: RunRecord, requests: Sequence[Request], *, kaboo: bool) -> StateSnapshotEvent:
    """The state after a run: the host's own keys, and `kaboo_sessions` saying what waits and where the pause is."""
    paused = (
        {"run_id": run.run_id, "pause_id": run.pause_id, "thread_id": run.thread_id, "agent": run.agent}
        if run.status == "paused" and run.pause_id is not None
        else None
    )
    approvals = [
        interrupt(r, kaboo=kaboo).model_dump(mode="json", by_alias=True, exclude_none=True)
        for r in requests
        if isinstance(r, Shown)
    ]
    state = dict(host_state) if isinstance(host_state, dict) else {}
    return StateSnapshotEvent(snapshot={**state, SESSIONS_KEY: {"approvals": approvals, "paused": paused}})


def replayed(host_state: Any, waiting: RunRecord) -> Mapping[str, object] | None:
    """The pause reference the state names (`kaboo_sessions.paused`) when it is not the pause `waiting` holds."""
    sessions = host_state.get(SESSIONS_KEY) if isinstance(host_state, dict) else None
    paused = sessions.get("paused") if isinstance(sessions, dict) else None
    if not isinstance(paused, dict) or paused.get("pause_id") in (None, waiting.pause_id):
        return None
    return paused


def replay_refused(named: Mapping[str, object], waiting: RunRecord, *, this_threads: bool) -> InvalidInput:
    """The refusal of a resume whose state names another pause than the one the thread waits on; nothing ran.

    `this_threads`: the state names a run of this thread, so its pause was one the thread already moved
    past (an answered gate, replayed). Otherwise the pause is not this thread's, and nothing more is said
    of it: whose it is, or whether it still waits, is not this caller's to learn here.
    """
    pause, thread = named.get("pause_id"), waiting.thread_id
    said = "which was already answered" if this_threads else f"which is not a pause of thread {thread!r}"
    return refused(
        f"the state names pause {pause!r}, {said}; thread {thread!r} now waits on pause {waiting.pause_id!r} "
        "(read the latest state)"
    )
