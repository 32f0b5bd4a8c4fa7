"""The fastmcp pattern sayso's `/mcp` will serve paused runs with, pinned in-process: ask, carry state, read answers.

A tool (a background task or a plain call) that must wait for a person returns an
`InputRequiredResult` whose input requests are elicitations keyed by sayso request ids and whose
`request_state` names the run; the client answers them and the tool runs again, reading the
answers under the same keys and the run id back. Nothing is held in the server between the legs,
which is what lets a paused sayso run live only in its store.
"""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest
from fastmcp import Client, Context, FastMCP
from fastmcp_tasks import TasksExtension

APPROVAL_FORM = {
    "type": "object",
    "properties": {
        "decision": {"type": "string", "enum": ["approve", "reject"]},
        "reason": {"type": "string"},
    },
    "required": ["decision"],
}


def paused_run_server(legs: list[tuple[str | None, dict[str, Any] | None]]) -> FastMCP:
    """An agent-as-tool, both as a background task and as a plain call, that pauses once on an approval."""
    server = FastMCP("sayso-pattern")
    server.add_extension(TasksExtension(url="memory://"))

    async def run_or_resume(message: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
        answers = ctx.input_responses
        legs.append((ctx.request_state, {k: v.model_dump(exclude_none=True) for k, v in (answers or {}).items()}))
        if not answers:
            form = mcp_types.ElicitRequestFormParams(
                message=f"Approve delete_file for {message!r}?", requested_schema=APPROVAL_FORM
            )
            return mcp_types.InputRequiredResult(
                input_requests={"req_1": mcp_types.ElicitRequest(params=form)}, request_state="run_1"
            )
        answer = answers["req_1"]
        assert isinstance(answer, mcp_types.ElicitResult) and answer.content is not None
        return f"{ctx.request_state}: {answer.content['decision']}"

    server.tool(run_or_resume, name="files_task", task=True)
    server.tool(run_or_resume, name="files")
    return server


@pytest.mark.parametrize("tool", ["files_task", "files"])
async def test_a_paused_run_is_asked_as_elicitations_and_resumed_with_its_state(tool: str) -> None:
    """Leg one asks with the run id as state; leg two gets the answer under the request id and the run id back."""
    legs: list[tuple[str | None, dict[str, Any] | None]] = []
    asked: list[str] = []

    async def person(message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult:
        asked.append(message)
        return mcp_types.ElicitResult(action="accept", content={"decision": "approve"})

    async with Client(paused_run_server(legs), elicitation_handler=person) as client:
        result = await client.call_tool(tool, {"message": "notes.txt"})
    assert result.data == "run_1: approve"
    assert asked == ["Approve delete_file for 'notes.txt'?"]
    assert legs == [(None, {}), ("run_1", {"req_1": {"action": "accept", "content": {"decision": "approve"}}})]
