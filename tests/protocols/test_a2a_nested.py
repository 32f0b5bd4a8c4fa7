"""kagent's `nested` block over a real server: a sayso coordinator whose delegates pause, answered over A2A."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sayso import load_config

from .a2a_helpers import URI, rpc, user_message
from .conftest import start

TEAM = Path(__file__).parents[2] / "examples" / "team" / "sayso.yaml"


def call(base_url: str, message: dict[str, Any]) -> dict[str, Any]:
    body = rpc(base_url, "coordinator", "SendMessage", {"message": message}).json()
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def test_delegate_pauses_show_the_nested_block_and_the_child_ids_resume_them() -> None:
    server = start(load_config(TEAM))
    try:
        task = call(server.base_url, user_message("report"))
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
        task = call(server.base_url, user_message(task_id=task["id"], context_id=task["contextId"], payload=approve))
        second = task["status"]["message"]["metadata"][URI]
        assert second["type"] == "ask_user_request"
        assert second["nested"]["subagent_name"] == "analyst"
        [ask] = second["nested"]["tools"]
        assert ask["name"] == "ask_user"

        answer = {"type": "ask_user_response", "id": ask["id"], "answers": [{"answer": ["Q4"]}]}
        task = call(server.base_url, user_message(task_id=task["id"], context_id=task["contextId"], payload=answer))
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        text = task["status"]["message"]["parts"][0]["text"]
        assert "Revenue in Q4 grew 5%." in text and "Archived the logs of 2026-10." in text
    finally:
        server.stop()
