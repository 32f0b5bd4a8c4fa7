"""kagent's `nested` block, in-process: a sayso coordinator whose delegates pause, answered over A2A."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from sayso import load_config

from .a2a_helpers import URI, rpc, user_message
from .conftest import ServerFactory

TEAM = Path(__file__).parents[2] / "examples" / "team" / "sayso.yaml"


async def call(client: httpx.AsyncClient, message: dict[str, Any]) -> dict[str, Any]:
    body = (await rpc(client, "coordinator", "SendMessage", {"message": message})).json()
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def test_delegate_pauses_show_the_nested_block_and_the_child_ids_resume_them(serve: ServerFactory) -> None:
    """Each delegate's pause shows as kagent's `nested` block; answering the child ids finishes the parent task."""
    server = await serve(config=load_config(TEAM))
    async with server.client() as client:
        task = await call(client, user_message("report"))
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        first = task["status"]["message"]["metadata"][URI]
        assert first["type"] == "tool_approval_request"
        assert [t["name"] for t in first["tools"]] == ["ops"]
        nested = first["nested"]
        assert nested["subagent_name"] == "ops"
        assert nested["task_id"] != task["id"]
        [child_tool] = nested["tools"]
        assert (child_tool["name"], child_tool["args"]) == ("archive_logs", {"month": "2026-10"})

        approve = {"type": "tool_approval_response", "approvals": [{"id": child_tool["id"], "approved": True}]}
        task = await call(client, user_message(task_id=task["id"], context_id=task["contextId"], payload=approve))
        second = task["status"]["message"]["metadata"][URI]
        assert second["type"] == "ask_user_request"
        assert second["nested"]["subagent_name"] == "analyst"
        [ask] = second["nested"]["tools"]
        assert ask["name"] == "ask_user"

        answer = {"type": "ask_user_response", "id": ask["id"], "answers": [{"answer": ["Q4"]}]}
        task = await call(client, user_message(task_id=task["id"], context_id=task["contextId"], payload=answer))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "Revenue in Q4 grew 5%." in text and "Archived the logs of 2026-10." in text
