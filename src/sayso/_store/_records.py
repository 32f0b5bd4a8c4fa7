"""Rows as the rest of sayso sees them: frozen dataclasses, free of SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .._core.requests import ClientTool

RunStatus: TypeAlias = Literal["running", "paused", "completed", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class ThreadRecord:
    """A conversation, owned by the principal that started it."""

    thread_id: str
    owner: str
    agent: str
    active_run_id: str | None
    """The run that is running or paused on this thread, if any: one at a time."""
    created_at: float


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One turn of a thread; a resume continues the same run."""

    run_id: str
    thread_id: str
    agent: str
    status: RunStatus
    prompt: str | None
    """The user message that started the run, kept so a crashed run can be carried on."""
    client_tools: tuple[ClientTool, ...]
    """Tools the client declared for this run, offered again when it resumes."""
    principal: str | None
    resume_pause_id: str | None
    """The pause whose decisions the current segment applies."""
    pause_id: str | None
    """The open pause, while the run is paused."""
    output: str | None
    error: str | None
    lease_owner: str | None
    lease_expires_at: float | None
    created_at: float
    updated_at: float
    revision: int
    parent_run_id: str | None = None
    """For a delegate's run: the run whose tool call handed it the work."""
    parent_call_id: str | None = None
    agent_path: str | None = None
    """`coordinator/analyst` for a delegate; `None` means the agent itself is the top."""

    @property
    def path(self) -> str:
        """The agent path, defaulting to the agent's own name at the top level."""
        return self.agent_path or self.agent


@dataclass(frozen=True, kw_only=True)
class ExecutionRecord:
    """The ledger entry that makes an approved call run at most once."""

    request_id: str
    status: Literal["executing", "done"]
    result: bytes | None
