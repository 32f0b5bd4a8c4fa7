"""A2A with kagent's HITL extension v1, in-process: the conformance points docs/guides/a2a.md promises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import TaskState
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from sayso import Sayso

from .a2a_helpers import (
    HEADERS,
    PLAIN,
    URI,
    collect,
    get_task,
    hitl,
    rpc,
    sdk_client,
    sdk_message,
    send,
    stream,
    task_of,
    user_message,
)
from .conftest import InProcess, ServerFactory, two_deletes

SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"


async def pause(client: httpx.AsyncClient, text: str = "delete notes", headers: dict[str, str] | None = None) -> Any:
    task = task_of(await send(client, user_message(text), headers))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    assert "error" in body, body
    error: dict[str, Any] = body["error"]
    return error


@pytest.fixture
async def server(serve: ServerFactory) -> InProcess:
    """The example, with A2A and AG-UI, in local development mode."""
    return await serve()


@pytest.fixture
async def client(server: InProcess) -> Any:
    """A client of `server`, through its ASGI transport."""
    async with server.client() as http:
        yield http


# --- discovery and negotiation: the agent card and the extension header


async def test_each_agent_card_declares_the_extension_and_the_entry_card_is_at_the_root(
    client: httpx.AsyncClient,
) -> None:
    """Each agent's card, and the entry agent's at the root, declares the HITL extension (not required)."""
    for path in ("/a2a/files/.well-known/agent-card.json", "/.well-known/agent-card.json"):
        card = (await client.get(path)).json()
        assert card["name"] == "files"
        assert card["capabilities"]["streaming"] is True
        assert card["capabilities"]["extensions"] == [
            {
                "uri": URI,
                "description": "Human in the loop for tool approval, ask user, and nested subagents",
                "required": False,
            }
        ]
        assert card["supportedInterfaces"][0]["url"] == f"{client.base_url}/a2a/files"


@pytest.mark.parametrize(
    ("header", "value", "activated"),
    [
        pytest.param("A2A-Extensions", URI, True, id="exact"),
        pytest.param("a2a-extensions", f"https://example.com/other ,  {URI}", True, id="list-and-case"),
        pytest.param("X-A2A-Extensions", URI, True, id="a2a-0.3-name"),
        pytest.param("A2A-Extensions", "https://kagent.dev/extensions/hitl/v2", False, id="v2-does-not-activate"),
    ],
)
async def test_the_extension_activates_on_an_exact_uri_and_is_echoed(
    client: httpx.AsyncClient, header: str, value: str, activated: bool
) -> None:
    """Only the exact v1 URI, under either header name, activates the extension and is echoed back."""
    message = {"message": user_message("delete notes")}
    response = await rpc(client, "files", "SendMessage", message, {**PLAIN, header: value})
    assert response.headers.get("A2A-Extensions") == (URI if activated else None)
    message = response.json()["result"]["task"]["status"]["message"]
    assert (hitl(message) is not None) is activated


async def test_no_echo_without_the_header(client: httpx.AsyncClient) -> None:
    """A call that does not ask for the extension gets no `A2A-Extensions` header back."""
    response = await rpc(client, "files", "SendMessage", {"message": user_message("list")}, PLAIN)
    assert "A2A-Extensions" not in response.headers
    assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_streaming_response_echoes_the_header(client: httpx.AsyncClient) -> None:
    """A streamed call echoes the extension, starts with a working task and ends on the pause with its payload."""
    headers, events = await stream(client, user_message("delete notes"))
    assert headers["A2A-Extensions"] == URI
    assert events[0]["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    last = events[-1]["result"]["statusUpdate"]
    assert last["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert hitl(last["status"]["message"])["type"] == "tool_approval_request"


# --- the pause message: kagent's payloads and status text


async def test_an_approval_pause_has_one_text_part_and_exactly_kagents_payload(
    client: httpx.AsyncClient, server: InProcess
) -> None:
    """An approval pause is one text part plus kagent's payload, with sayso's own facts under a key of ours."""
    task = await pause(client)
    message = task["status"]["message"]
    assert message["role"] == "ROLE_AGENT"
    assert message["taskId"] == task["id"] and message["contextId"] == task["contextId"]
    assert message["parts"] == [{"text": "Deleting a file cannot be undone. (delete_file)"}]
    assert message["extensions"] == [URI]
    payload = hitl(message)
    request = (await requests_of(server.sayso, task["id"]))[0]
    assert payload == {
        "type": "tool_approval_request",
        "hint": "Deleting a file cannot be undone. (delete_file)",
        "tools": [
            {
                "id": request.request_id,
                "call_id": request.tool_call_id,
                "name": "delete_file",
                "args": {"name": "notes.txt"},
            }
        ],
    }
    # sayso's own facts travel under a key of our own, never inside kagent's payload.
    ours = message["metadata"][SAYSO_KEY]["requests"][0]
    assert ours["subject"] == {"key": "folder:.", "label": "the sandbox's top folder"}
    assert ours["scopes"] == ["once", "thread", "always"]
    assert ours["expires_at"] is None


async def test_without_the_header_the_pause_is_text_only(client: httpx.AsyncClient) -> None:
    """Without the extension the pause is text only, and stays so when read later with the header."""
    task = await pause(client, headers=PLAIN)
    message = task["status"]["message"]
    assert message["parts"] == [{"text": "Deleting a file cannot be undone. (delete_file)"}]
    assert "extensions" not in message and "metadata" not in message
    # A later read with the header does not add a payload that was never attached.
    assert "metadata" not in (await get_task(client, task["id"], HEADERS))["status"]["message"]


async def test_a_stored_payload_comes_back_on_every_read(client: httpx.AsyncClient) -> None:
    """A payload attached once comes back on later reads, even without the header."""
    task = await pause(client)
    read = await get_task(client, task["id"], PLAIN)
    assert read["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert hitl(read["status"]["message"]) == hitl(task["status"]["message"])


async def test_an_ask_user_pause_states_the_question(client: httpx.AsyncClient, server: InProcess) -> None:
    """A question pause says the question as its text and carries kagent's `ask_user_request`."""
    task = await pause(client, "delete report")
    message = task["status"]["message"]
    assert message["parts"] == [{"text": "Several files match. Which one should I delete?"}]
    request = (await requests_of(server.sayso, task["id"]))[0]
    assert hitl(message) == {
        "type": "ask_user_request",
        "id": request.request_id,
        "questions": [
            {
                "question": "Several files match. Which one should I delete?",
                "choices": ["report-2025.txt", "report-2026.txt"],
                "multiple": False,
            }
        ],
    }


# --- responses: a client's answer to a paused task


def approve(task: dict[str, Any], approvals: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    payload = {"type": "tool_approval_response", "approvals": approvals}
    return user_message("Approved", task_id=task["id"], context_id=task["contextId"], payload=payload, **kwargs)


def tool_id(task: dict[str, Any]) -> str:
    tool: str = hitl(task["status"]["message"])["tools"][0]["id"]
    return tool


async def test_an_approval_runs_the_exact_call_and_completes_the_task(client: httpx.AsyncClient, sandbox: Path) -> None:
    """An approval response runs the call shown and completes the same task, echoing the extension."""
    task = await pause(client)
    message = approve(task, [{"id": tool_id(task), "approved": True}])
    response = await rpc(client, "files", "SendMessage", {"message": message})
    assert response.headers["A2A-Extensions"] == URI
    done = response.json()["result"]["task"]
    assert done["id"] == task["id"] and done["contextId"] == task["contextId"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"] == [{"text": "Deleted notes.txt."}]
    assert not (sandbox / "notes.txt").exists()


async def test_a_rejection_reason_reaches_the_model_and_nothing_runs(
    client: httpx.AsyncClient, server: InProcess, sandbox: Path
) -> None:
    """A rejection's reason is what the model reads, and the call never runs."""
    task = await pause(client)
    decision = {"id": tool_id(task), "approved": False, "rejection_reason": "keep it for now"}
    done = task_of(await send(client, approve(task, [decision])))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (sandbox / "notes.txt").exists()
    assert "Declined: keep it for now" in await tool_results(server.sayso, task["contextId"])


@pytest.mark.parametrize(
    ("approvals", "problem"),
    [
        pytest.param([], "non-empty", id="empty"),
        pytest.param([{"id": "req_nope", "approved": True}], "missing ids", id="only-unknown-is-missing"),
        pytest.param("DUP", "duplicate ids", id="duplicate"),
        pytest.param("UNKNOWN", "unknown ids: req_zz", id="unknown"),
        pytest.param("STRING", "JSON boolean", id="approved-as-string"),
    ],
)
async def test_an_invalid_response_is_refused_and_the_pause_stays_open(
    client: httpx.AsyncClient, sandbox: Path, approvals: Any, problem: str
) -> None:
    """A malformed or incomplete approval response is an invalid-params error; nothing runs and the task waits."""
    task = await pause(client)
    known = tool_id(task)
    approvals = (
        {
            "DUP": [{"id": known, "approved": True}, {"id": known, "approved": True}],
            "UNKNOWN": [{"id": known, "approved": True}, {"id": "req_zz", "approved": True}],
            "STRING": [{"id": known, "approved": "true"}],
        }.get(approvals, approvals)
        if isinstance(approvals, str)
        else approvals
    )
    error = error_of(await send(client, approve(task, approvals)))
    assert error["code"] == -32602
    assert problem in error["message"]
    assert (await get_task(client, task["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert (sandbox / "notes.txt").exists()


async def test_two_approvals_must_both_be_decided(serve: ServerFactory, sandbox: Path) -> None:
    """Two gated calls in one turn: leaving one out is refused, never approved."""
    server = await serve(models={"demo": two_deletes()})
    async with server.client() as client:
        task = await pause(client, "delete both")
        tools = hitl(task["status"]["message"])["tools"]
        assert [t["name"] for t in tools] == ["delete_file", "delete_file"]
        assert task["status"]["message"]["parts"] == [
            {"text": "Deleting a file cannot be undone.; Deleting a file cannot be undone. (delete_file, delete_file)"}
        ]
        error = error_of(await send(client, approve(task, [{"id": tools[0]["id"], "approved": True}])))
        assert "missing ids" in error["message"]
        assert (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()
        both = [{"id": tools[1]["id"], "approved": False}, {"id": tools[0]["id"], "approved": True}]
        done = task_of(await send(client, approve(task, both)))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()


async def test_a_resume_without_the_header_is_accepted_when_the_message_declares_the_extension(
    client: httpx.AsyncClient, sandbox: Path
) -> None:
    """A response declared in the message's `extensions` counts even when the call sent no header."""
    task = await pause(client)
    message = approve(task, [{"id": tool_id(task), "approved": True}])
    response = await rpc(client, "files", "SendMessage", {"message": message}, PLAIN)
    assert "A2A-Extensions" not in response.headers
    assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize(
    ("kagent_compat", "message_of", "why"),
    [
        pytest.param(
            False,
            lambda task: user_message("never mind", task_id=task["id"]),
            "a plain message is no HITL response",
            id="text",
        ),
        pytest.param(
            False,
            lambda task: approve(task, [{"id": tool_id(task), "approved": True}], declare=False),
            "not declared",
            id="undeclared-payload",
        ),
        pytest.param(
            False,
            lambda task: user_message(task_id=task["id"], payload={"decision_type": "approve"}),
            "the HITL payload needs a string 'type'",
            id="declared-payload-without-type",
        ),
        pytest.param(
            True,
            lambda task: user_message("ok", task_id=task["id"], data=[{"decision_type": "approve_all"}]),
            "decision_type 'approve_all'",
            id="unknown-decision-type",
        ),
    ],
)
async def test_a_message_that_answers_nothing_is_refused_and_the_task_keeps_waiting(
    serve: ServerFactory, sandbox: Path, kagent_compat: bool, message_of: Any, why: str
) -> None:
    """Text, an undeclared or untyped payload or an unknown decision_type sent with a waiting task's id is refused,
    saying what the task waits for; the task stays INPUT_REQUIRED with nothing run, and the real answer still counts."""
    server = await serve(a2a={"kagent_compat": kagent_compat})
    async with server.client() as client:
        task = await pause(client)
        error = error_of(await send(client, message_of(task)))
        assert error["code"] == -32602
        assert why in error["message"]
        assert "waits for a tool_approval_response" in error["message"]
        assert "delete_file" in error["message"] and "without taskId" in error["message"]
        still = await get_task(client, task["id"])
        assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert [m["role"] for m in still["history"]] == ["ROLE_USER", "ROLE_AGENT"]
        assert (sandbox / "notes.txt").exists()
        done = task_of(await send(client, approve(task, [{"id": tool_id(task), "approved": True}])))
    assert done["id"] == task["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "notes.txt").exists()


async def test_a_new_message_on_the_context_without_the_task_id_moves_on(
    client: httpx.AsyncClient, sandbox: Path
) -> None:
    """The person moves on with a message on the context and no task id: the waiting task is skipped, never run."""
    task = await pause(client)
    moved_on = task_of(await send(client, user_message("list", context_id=task["contextId"])))
    assert moved_on["id"] != task["id"] and moved_on["contextId"] == task["contextId"]
    assert moved_on["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (sandbox / "notes.txt").exists()
    assert (await get_task(client, task["id"]))["status"]["state"] == "TASK_STATE_CANCELED"


async def test_a_request_type_sent_back_is_refused(client: httpx.AsyncClient) -> None:
    """Sending the agent's own request payload back is refused, and the task still waits."""
    task = await pause(client)
    message = user_message(task_id=task["id"], payload=hitl(task["status"]["message"]))
    error = error_of(await send(client, message))
    assert "not a HITL response" in error["message"]
    assert (await get_task(client, task["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_a_message_to_a_task_that_is_not_waiting_is_refused(client: httpx.AsyncClient) -> None:
    """A response or a message to a finished task is refused, saying the task no longer waits."""
    task = await pause(client)
    answer = approve(task, [{"id": tool_id(task), "approved": True}])
    assert task_of(await send(client, answer))["status"]["state"] == "TASK_STATE_COMPLETED"
    again = error_of(await send(client, {**answer, "messageId": "again"}))
    assert "not waiting for input" in again["message"]
    text = error_of(await send(client, user_message("hello", task_id=task["id"])))
    assert "completed" in text["message"]


async def test_an_unknown_task_is_not_found(client: httpx.AsyncClient) -> None:
    """A message naming a task that does not exist gets A2A's task-not-found error."""
    error = error_of(await send(client, user_message("hi", task_id="run_nope")))
    assert error["code"] == -32001


async def test_ask_user_then_approval_pause_the_same_task_one_type_at_a_time(
    client: httpx.AsyncClient, sandbox: Path
) -> None:
    """A question then an approval pause the same task in turn; each answer is checked before it counts."""
    task = await pause(client, "delete report")
    asked = hitl(task["status"]["message"])

    def answer(answer_id: str, answers: list[dict[str, Any]]) -> dict[str, Any]:
        payload = {"type": "ask_user_response", "id": answer_id, "answers": answers}
        return user_message(task_id=task["id"], context_id=task["contextId"], payload=payload)

    wrong_id = error_of(await send(client, answer("req_other", [{"answer": ["report-2025.txt"]}])))
    assert "invalid correlation" in wrong_id["message"]
    too_many = error_of(await send(client, answer(asked["id"], [{"answer": ["a"]}, {"answer": ["b"]}])))
    assert "expected 1 answer" in too_many["message"]
    two_for_one = error_of(await send(client, answer(asked["id"], [{"answer": ["a", "b"]}])))
    assert "takes one answer" in two_for_one["message"]
    wrong_type = error_of(await send(client, approve(task, [{"id": asked["id"], "approved": True}])))
    assert "waits for a ask_user_response" in wrong_type["message"]

    then = task_of(await send(client, answer(asked["id"], [{"answer": ["report-2025.txt"]}])))
    assert then["id"] == task["id"]
    assert then["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    approval = hitl(then["status"]["message"])
    assert approval["type"] == "tool_approval_request"
    assert approval["tools"][0]["args"] == {"name": "report-2025.txt"}
    done = task_of(await send(client, approve(then, [{"id": approval["tools"][0]["id"], "approved": True}])))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "report-2025.txt").exists() and (sandbox / "report-2026.txt").exists()


# --- durability and the SDK's own client


async def test_a_paused_task_is_answered_by_another_process_after_a_restart(
    serve: ServerFactory, sandbox: Path
) -> None:
    """A task paused on one server is read and answered on a new one over the same store."""
    first = await serve()
    async with first.client() as client:
        task = await pause(client)
    await first.stop()
    second = await serve()
    async with second.client() as client:
        read = await get_task(client, task["id"])
        assert hitl(read["status"]["message"]) == hitl(task["status"]["message"])
        done = task_of(await send(client, approve(task, [{"id": tool_id(task), "approved": True}])))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "notes.txt").exists()


@pytest.mark.parametrize("streaming", [pytest.param(True, id="streaming"), pytest.param(False, id="blocking")])
async def test_the_a2a_sdk_client_pauses_and_approves(server: InProcess, sandbox: Path, streaming: bool) -> None:
    """The a2a-sdk's own client, streaming or blocking, sees the pause and approves it to completion."""
    async with server.client() as http:
        client = await sdk_client(http, streaming=streaming)
        events = await collect(client, sdk_message("delete notes"))
        last = events[-1]
        status = last.status_update.status if last.HasField("status_update") else last.task.status
        task_id = last.status_update.task_id if last.HasField("status_update") else last.task.id
        context_id = last.status_update.context_id if last.HasField("status_update") else last.task.context_id
        assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert list(status.message.extensions) == [URI]
        request_id = status.message.metadata[URI]["tools"][0]["id"]  # type: ignore[index]  # a protobuf Struct
        payload = {"type": "tool_approval_response", "approvals": [{"id": request_id, "approved": True}]}
        events = await collect(client, sdk_message(task_id=task_id, context_id=context_id, payload=payload))
        last = events[-1]
        status = last.status_update.status if last.HasField("status_update") else last.task.status
        assert status.state == TaskState.TASK_STATE_COMPLETED
        assert status.message.parts[0].text == "Deleted notes.txt."
        await client.close()
    assert not (sandbox / "notes.txt").exists()


# --- helpers reading what the server stored, through its runtime's verbs


async def requests_of(sayso: Sayso, run_id: str) -> list[Any]:
    return list((await sayso.result(run_id)).requests)


async def tool_results(sayso: Sayso, thread_id: str) -> str:
    messages = await sayso.messages(thread_id)
    return "\n".join(
        str(p.content)
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    )


# --- kagent 0.x compatibility (a2a.kagent_compat)


async def test_compat_mode_emits_legacy_data_parts_and_accepts_a_batch(serve: ServerFactory, sandbox: Path) -> None:
    """In compat mode a pause is kagent 0.x DataParts, and a batch must decide every call it shows."""
    server = await serve(a2a={"kagent_compat": True}, models={"demo": two_deletes()})
    async with server.client() as client:
        task = await pause(client, "delete both", headers=PLAIN)
        parts = task["status"]["message"]["parts"]
        assert [p["data"]["name"] for p in parts] == ["adk_request_confirmation"] * 2
        assert all(
            p["metadata"]["kagent_type"] == "function_call" and p["metadata"]["kagent_is_long_running"] for p in parts
        )
        assert "extensions" not in task["status"]["message"]
        calls = [p["data"]["args"]["originalFunctionCall"]["id"] for p in parts]
        left_out = {"decision_type": "batch", "decisions": {calls[0]: "approve"}}
        error = error_of(await send(client, user_message("Batch", task_id=task["id"], data=[left_out]), PLAIN))
        assert f"missing ids: {calls[1]}" in error["message"]
        assert (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()
        batch = {
            "decision_type": "batch",
            "decisions": {calls[0]: "approve", calls[1]: "reject"},
            "rejection_reasons": {calls[1]: "keep the list"},
        }
        decided = user_message("Batch decision: 1 approved, 1 rejected", task_id=task["id"], data=[batch])
        done = task_of(await send(client, decided, PLAIN))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()


async def test_compat_mode_still_speaks_v1_to_clients_that_ask_for_it(serve: ServerFactory) -> None:
    """Compat mode answers a client that asks for the v1 extension with the v1 payload."""
    server = await serve(a2a={"kagent_compat": True})
    async with server.client() as client:
        task = await pause(client)
    assert hitl(task["status"]["message"])["type"] == "tool_approval_request"


async def test_an_a2a_0_3_client_gets_the_legacy_pause_and_answers_it(serve: ServerFactory, sandbox: Path) -> None:
    """kagent 0.x spoke A2A 0.3 (`message/send`, `kind`-tagged parts, no version header)."""
    server = await serve(a2a={"kagent_compat": True})
    message = {
        "kind": "message",
        "messageId": "m-1",
        "role": "user",
        "parts": [{"kind": "text", "text": "delete notes"}],
    }
    async with server.client() as client:
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        task = (await client.post("/a2a/files", json=body)).json()["result"]
        assert task["status"]["state"] == "input-required"
        (part,) = task["status"]["message"]["parts"]
        assert part["kind"] == "data" and part["data"]["name"] == "adk_request_confirmation"
        decision = {
            "kind": "message",
            "messageId": "m-2",
            "role": "user",
            "taskId": task["id"],
            "contextId": task["contextId"],
            "parts": [
                {"kind": "data", "data": {"decision_type": "approve"}, "metadata": {}},
                {"kind": "text", "text": "Approved"},
            ],
        }
        body = {"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": {"message": decision}}
        done = (await client.post("/a2a/files", json=body)).json()["result"]
    assert done["status"]["state"] == "completed"
    assert not (sandbox / "notes.txt").exists()
