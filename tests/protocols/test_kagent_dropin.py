"""What a kagent client does, unchanged, against sayso over A2A (issue 23): answers, workflows, nesting, 0.x."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from sayso import Sayso

from .a2a_helpers import hitl, send, task_of, user_message
from .conftest import InProcess, ServerFactory


@pytest.fixture
async def server(serve: ServerFactory) -> InProcess:
    return await serve()


@pytest.fixture
async def client(server: InProcess) -> Any:
    async with server.client() as http:
        yield http


async def tool_results(sayso: Sayso, thread_id: str) -> list[Any]:
    """What the model read back from its tools on a thread, in order."""
    return [
        p.content
        for m in await sayso.messages(thread_id)
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


# --- free text beside a choice (seed 000: "alongside (or instead of) the predefined choices")


async def test_a_choice_plus_free_text_answers_a_single_select_question(
    client: httpx.AsyncClient, server: InProcess
) -> None:
    """kagent's ask_user_response with one choice and the person's own words is accepted; the model reads both."""
    task = task_of(await send(client, user_message("delete report")))
    asked = hitl(task["status"]["message"])
    assert asked["type"] == "ask_user_request"
    [question] = asked["questions"]
    assert question["choices"] == ["report-2025.txt", "report-2026.txt"]
    assert question.get("multiple", False) is False
    answers = [{"answer": ["report-2025.txt", "keep a copy"]}]
    answer = {"type": "ask_user_response", "id": asked["id"], "answers": answers}
    reply = user_message(task_id=task["id"], context_id=task["contextId"], payload=answer)
    then = task_of(await send(client, reply))
    assert then["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # the delete it chose waits for approval
    assert hitl(then["status"]["message"])["tools"][0]["args"] == {"name": "report-2025.txt"}
    [*_, read] = await tool_results(server.sayso, task["contextId"])
    assert read == [
        {"question": "Several files match. Which one should I delete?", "answer": ["report-2025.txt", "keep a copy"]}
    ]
