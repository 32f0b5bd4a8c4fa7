"""kaboo's session state on the AG-UI state channel: a run's open requests and a reference to its pause.

With `runtime.persist_session_state` (on by default), every run ends with a `STATE_SNAPSHOT`
that keeps the host's own state keys and sets `kaboo_sessions`:

- `approvals`: the open requests, each as the interrupt the run finished with (a kaboo host draws
  its approval cards from them);
- `paused`: `{run_id, pause_id, thread_id, agent}` while the run waits, else `null`. The pause
  itself lives in sayso's store, so this reference is all any process needs to resume it.

A host that replays an older state cannot bring back a gate already answered: a resume whose
state names another pause than the one the thread waits on is refused, and nothing runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ag_ui.core import StateSnapshotEvent

from ..._core.requests import Request
from ..._runtime import RunRecord
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


def check_replayed(host_state: Any, waiting: RunRecord) -> None:
    """Refuse a resume whose state names a pause other than the one `waiting` holds (an answered gate, replayed).

    Raises:
        InvalidInput: the state's `kaboo_sessions.paused` names another pause.
    """
    sessions = host_state.get(SESSIONS_KEY) if isinstance(host_state, dict) else None
    paused = sessions.get("paused") if isinstance(sessions, dict) else None
    if not isinstance(paused, dict) or paused.get("pause_id") in (None, waiting.pause_id):
        return
    raise refused(
        f"the state names pause {paused.get('pause_id')!r}, which was already answered; "
        f"thread {waiting.thread_id!r} now waits on pause {waiting.pause_id!r} (read the latest state)"
    )
