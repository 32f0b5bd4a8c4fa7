"""What `run`, `resume` and `decide` return, and their plain-JSON form used by the CLI and the APIs."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    QuestionRequest,
    Request,
    shown_args,
)
from ._store import RunStatus


@dataclass(frozen=True, kw_only=True)
class RunResult:
    """Where a run stands: completed with its output, or paused with the requests it waits on."""

    run_id: str
    thread_id: str
    agent: str
    status: RunStatus
    output: str | None = None
    """The final text, when completed."""
    requests: tuple[Request, ...] = ()
    """What the run waits on, when paused."""
    error: str | None = None
    """What went wrong, when failed."""


@dataclass(frozen=True, kw_only=True)
class DecideResult:
    """The outcome of one decision."""

    request_id: str
    recorded: bool
    """False when the decision repeated one already taken (a harmless no-op)."""
    run: RunResult
    """The run after the decision: still paused on other requests, or resumed to its next stop."""


def request_json(request: Request) -> dict[str, Any]:
    """A request as plain JSON, the same shape on every interface."""
    body: dict[str, Any] = {
        "id": request.request_id,
        "kind": request.kind,
        "run_id": request.run_id,
        "thread_id": request.thread_id,
        "agent_path": request.agent_path,
        "parent_call_id": request.parent_call_id,
        "tool_call_id": request.tool_call_id,
        "tool_name": request.tool_name,
        "args": shown_args(request),
        "created_at": request.created_at,
        "expires_at": request.expires_at,
    }
    if isinstance(request, ApprovalRequest):
        body.update(
            hint=request.hint,
            subject=asdict(request.subject) if request.subject else None,
            scopes=list(request.scopes),
            payload=request.payload,
            tool=asdict(request.tool_info) if request.tool_info else None,
        )
    elif isinstance(request, QuestionRequest):
        body["questions"] = [asdict(q) | {"choices": list(q.choices)} for q in request.questions]
    elif isinstance(request, ClientToolRequest):
        body.update(description=request.description, args_schema=request.args_schema)
    elif isinstance(request, ElicitationRequest):
        body.update(
            mode=request.mode,
            message=request.message,
            server=request.server,
            requested_schema=request.requested_schema,
            url=request.url,
            elicitation_id=request.elicitation_id,
            durable=elicitation_durable(request),
        )
    return body


def elicitation_durable(request: ElicitationRequest) -> bool:
    """Whether an answer to this elicitation reaches the server whichever process takes it (§9).

    A URL retry, a parked task and a stateless round trip are durable; a form pushed on a live call
    goes back only while the process holding that call lives (else it is replayed or closes as cancelled).
    """
    return request.delivery != "live"


def run_json(result: RunResult) -> dict[str, Any]:
    """A run result as plain JSON."""
    return {
        "run_id": result.run_id,
        "thread_id": result.thread_id,
        "agent": result.agent,
        "status": result.status,
        "output": result.output,
        "error": result.error,
        "requests": [request_json(r) for r in result.requests],
    }
