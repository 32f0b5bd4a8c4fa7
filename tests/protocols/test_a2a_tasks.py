"""A2A tasks as a client reads them: the history of a task, listing tasks, cancelling one, and every entry served."""

from __future__ import annotations

import contextlib
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.types import CancelTaskRequest, GetTaskRequest, ListTasksRequest, TaskState
from google.protobuf.json_format import MessageToDict
from typer.testing import CliRunner

from sayso import load_config
from sayso.cli import app as cli_app

from ..store.conftest import postgres_database
from .a2a_helpers import URI, collect, get_task, hitl, rpc, sdk_client, sdk_message, send, task_of, user_message
from .conftest import EXAMPLE, InProcess, ServerFactory

TEAM = Path(__file__).parents[2] / "examples" / "team" / "sayso.yaml"
SAYSO_KEY = "https://sayso.dev/extensions/requests/v1"


@pytest.fixture
async def server(serve: ServerFactory, sandbox: Path) -> InProcess:
    """The file manager, with A2A and AG-UI, in local development mode."""
    return await serve()


async def paused(client: httpx.AsyncClient, text: str = "delete notes") -> dict[str, Any]:
    task = task_of(await send(client, user_message(text)))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


def approve_message(task: dict[str, Any], approvals: list[dict[str, Any]], **sayso: Any) -> dict[str, Any]:
    message = user_message(
        "Approved",
        task_id=task["id"],
        context_id=task["contextId"],
        payload={"type": "tool_approval_response", "approvals": approvals},
    )
    if sayso:
        message["metadata"][SAYSO_KEY] = sayso
    return message


def shape(history: list[dict[str, Any]], ids: dict[str, str]) -> list[dict[str, Any]]:
    """A history with ids named by role instead of value, and the moment and channel of each decision dropped."""
    out = []
    for message in copy.deepcopy(history):
        for key in ("messageId", "taskId", "contextId"):
            message.pop(key, None)
        text = json.dumps(message)
        for value, name in ids.items():
            text = text.replace(value, name)
        message = json.loads(text)
        for entry in message.get("metadata", {}).get(SAYSO_KEY, {}).get("decisions", []):
            entry.pop("decided_at")
        out.append(message)
    return out


# --- history (must hold 1)


async def test_a_tasks_history_holds_the_turn_the_pause_the_decision_and_the_answer(server: InProcess) -> None:
    """GetTask returns the person's message, the pause with its payload, the decision message and the final answer."""
    async with server.client() as client:
        task = await paused(client)
        waiting = await get_task(client, task["id"])
        assert [m["role"] for m in waiting["history"]] == ["ROLE_USER", "ROLE_AGENT"]
        assert waiting["history"][0]["parts"] == [{"text": "delete notes"}]
        assert waiting["history"][1] == waiting["status"]["message"]
        tool_id = hitl(waiting["history"][1])["tools"][0]["id"]
        await send(client, approve_message(task, [{"id": tool_id, "approved": True}]))
        done = await get_task(client, task["id"])
    user, pause, decision, answer = done["history"]
    assert hitl(pause)["type"] == "tool_approval_request"
    assert decision["role"] == "ROLE_USER" and decision["parts"] == [{"text": "Approved"}]
    assert decision["extensions"] == [URI]
    assert hitl(decision) == {"type": "tool_approval_response", "approvals": [{"id": tool_id, "approved": True}]}
    assert decision["metadata"][SAYSO_KEY]["decisions"][0]["by"] == "person"
    assert answer == {**done["status"]["message"], "parts": [{"text": "Deleted notes.txt."}]}
    assert (await get_task_limited(server, task["id"], 1)) == [answer]


async def get_task_limited(server: InProcess, task_id: str, length: int) -> list[dict[str, Any]]:
    async with server.client() as client:
        response = await rpc(client, "files", "GetTask", {"id": task_id, "historyLength": length})
    history: list[dict[str, Any]] = response.json()["result"]["history"]
    return history


async def test_the_history_is_the_same_whether_the_pause_was_answered_over_a2a_rest_or_the_cli(
    server: InProcess, sandbox: Path
) -> None:
    """A question then an approval, answered over A2A, REST or the CLI, leave the same task history."""
    histories = []
    async with server.client() as client:
        for channel in ("a2a", "rest", "cli"):
            task = await paused(client, "delete report")
            question = hitl(task["status"]["message"])
            ids = {question["id"]: "<question>", task["id"]: "<task>", task["contextId"]: "<context>"}
            await answer(client, channel, task, question["id"], ["report-2025.txt"])
            then = await get_task(client, task["id"])
            approval = hitl(then["status"]["message"])["tools"][0]
            ids.update({approval["id"]: "<approval>", approval["call_id"]: "<call>"})
            await answer(client, channel, task, approval["id"], None)
            done = await get_task(client, task["id"])
            assert done["status"]["state"] == "TASK_STATE_COMPLETED"
            histories.append(shape(done["history"], ids))
            (sandbox / "report-2025.txt").write_text("Revenue grew 4% in 2025.\n")  # the same file, next time
    a2a, rest, cli = histories
    assert [m["role"] for m in a2a] == ["ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT"]
    assert hitl(a2a[2]) == {
        "type": "ask_user_response",
        "id": "<question>",
        "answers": [{"answer": ["report-2025.txt"]}],
    }
    assert a2a == rest == cli


async def answer(client: httpx.AsyncClient, channel: str, task: dict[str, Any], request_id: str, answers: Any) -> None:
    """Answer one request over A2A, REST or the CLI (the CLI opens the same store from its own runtime)."""
    if channel == "a2a":
        payload = (
            {"type": "ask_user_response", "id": request_id, "answers": [{"answer": answers}]}
            if answers
            else {"type": "tool_approval_response", "approvals": [{"id": request_id, "approved": True}]}
        )
        message = user_message(task_id=task["id"], context_id=task["contextId"], payload=payload)
        assert "result" in await send(client, message)
    elif channel == "rest":
        body = {"kind": "answer", "answers": [answers]} if answers else {"kind": "approve"}
        response = await client.post(f"/v1/requests/{request_id}/decision", json=body)
        assert response.status_code == 200, response.text
    else:
        args = ["decide", str(EXAMPLE), request_id, *(["answer", *answers] if answers else ["approve"])]
        done = await anyio.to_thread.run_sync(lambda: CliRunner().invoke(cli_app, args))
        assert done.exit_code == 0, done.output


# --- listing and cancelling (must hold 1, 7)


async def test_the_sdk_client_lists_gets_and_cancels_tasks(server: InProcess, sandbox: Path) -> None:
    """The a2a-sdk's client lists the caller's tasks (newest first, by context, a page at a time), reads one with
    its history, and cancels a waiting one: its request closes as skipped and nothing runs."""
    async with server.client() as http:
        first = await paused(http)
        second = task_of(await send(http, user_message("list", context_id="thr_second")))
        client = await sdk_client(http, streaming=False)
        listed = await client.list_tasks(ListTasksRequest())
        assert [t.id for t in listed.tasks] == [second["id"], first["id"]]
        assert listed.total_size == 2 and not listed.next_page_token
        assert [t.id for t in (await client.list_tasks(ListTasksRequest(context_id="thr_second"))).tasks] == [
            second["id"]
        ]
        waiting = await client.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_INPUT_REQUIRED))
        assert [t.id for t in waiting.tasks] == [first["id"]]
        page = await client.list_tasks(ListTasksRequest(page_size=1, history_length=0))
        assert [t.id for t in page.tasks] == [second["id"]] and not page.tasks[0].history
        rest = await client.list_tasks(ListTasksRequest(page_size=1, page_token=page.next_page_token))
        assert [t.id for t in rest.tasks] == [first["id"]]

        read = await client.get_task(GetTaskRequest(id=first["id"]))
        assert [MessageToDict(m)["role"] for m in read.history] == ["ROLE_USER", "ROLE_AGENT"]
        cancelled = await client.cancel_task(CancelTaskRequest(id=first["id"]))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        await client.close()
        again = await get_task(http, first["id"])
    assert again["status"]["state"] == "TASK_STATE_CANCELED"
    assert (sandbox / "notes.txt").exists()
    [request] = (await server.sayso.run_requests(first["id"])).requests
    decision = (await server.sayso.request(request.request_id)).decision
    assert decision is not None and decision.decision.kind == "skip"


async def test_list_tasks_reaches_every_task_however_many_threads_the_caller_has(server: InProcess) -> None:
    """Past a thousand threads, ListTasks still pages down to the oldest task, newest update first, each once, and
    counts every one in `totalSize`."""
    tasks = 1005
    started: list[str] = []

    async def start() -> None:
        started.append((await server.sayso.run("list")).run_id)

    async with anyio.create_task_group() as group:
        for _ in range(tasks):
            group.start_soon(start)
    runs = [await server.sayso.run_record(run_id) for run_id in started]
    newest = [r.run_id for r in sorted(runs, key=lambda r: (int(r.updated_at * 1e9), r.run_id), reverse=True)]
    async with server.client() as http:
        listed, token = [], None
        while True:
            params: dict[str, Any] = {"pageSize": 100, "historyLength": 0} | ({"pageToken": token} if token else {})
            result = (await rpc(http, "files", "ListTasks", params)).json()["result"]
            listed += [t["id"] for t in result["tasks"]]
            assert result["totalSize"] == tasks
            if not (token := result.get("nextPageToken")):
                break
    assert listed == newest


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_list_tasks_pages_in_order_on_sqlite_and_postgres(
    serve: ServerFactory, sandbox: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """On either store, ListTasks pages the caller's tasks newest update first, each once, a waiting one among
    finished ones; filtered by status or by a time, it pages those alike and counts them in `totalSize`."""
    async with contextlib.AsyncExitStack() as stack:
        if backend == "postgres":
            monkeypatch.setenv("SAYSO_STORE", await stack.enter_async_context(postgres_database()))
        server = await serve()
        for n in range(40):
            await server.sayso.run("delete notes" if n == 17 else "list")
        async with server.client() as http:
            every = [r.run_id for r in await _runs_newest_first(server)]
            waiting = [r.run_id for r in await _runs_newest_first(server) if r.status == "paused"]
            middle = (await _runs_newest_first(server))[20]
            moment = datetime.fromtimestamp(middle.updated_at, UTC)  # to the microsecond, as the call says it
            since, since_ns = moment.isoformat().replace("+00:00", "Z"), round(moment.timestamp() * 1e6) * 1000
            later = [r.run_id for r in await _runs_newest_first(server) if int(r.updated_at * 1e9) >= since_ns]
            assert await _list_all(http, {"pageSize": 7}) == (every, 40)
            assert await _list_all(http, {"pageSize": 7, "status": "TASK_STATE_INPUT_REQUIRED"}) == (waiting, 1)
            assert await _list_all(http, {"pageSize": 3, "statusTimestampAfter": since}) == (later, len(later))
        await server.stop()
    assert len(waiting) == 1 and 20 <= len(later) <= 21


async def _runs_newest_first(server: InProcess) -> list[Any]:
    """The server's top-level runs of the file manager, in A2A's order: newest update first (nanoseconds), then id."""
    page = await server.sayso.thread_page(limit=200)
    runs = [
        await server.sayso.run_record(e.run_id)
        for t in page.threads
        for e in await server.sayso.transcript(t.thread_id)
    ]
    unique = {r.run_id: r for r in runs if r.parent_run_id is None}
    return sorted(unique.values(), key=lambda r: (int(r.updated_at * 1e9), r.run_id), reverse=True)


async def _list_all(http: httpx.AsyncClient, params: dict[str, Any]) -> tuple[list[str], int]:
    """Every task ListTasks lists with `params`, page after page, and the `totalSize` each page says."""
    listed, totals, token = [], set(), None
    while True:
        call = params | {"historyLength": 0} | ({"pageToken": token} if token else {})
        result = (await rpc(http, "files", "ListTasks", call)).json()["result"]
        listed += [t["id"] for t in result.get("tasks", [])]
        totals.add(result.get("totalSize", 0))
        if not (token := result.get("nextPageToken")):
            break
    [total] = totals
    return listed, total


@pytest.mark.parametrize("status", ["TASK_STATE_WORKNG", "working", 42])
async def test_list_tasks_refuses_a_status_it_does_not_know_instead_of_listing_everything(
    server: InProcess, status: str | int
) -> None:
    """A misspelt or unknown `status` filter is invalid params naming it and the states accepted, not every task."""
    async with server.client() as client:
        await send(client, user_message("list"))
        error = (await rpc(client, "files", "ListTasks", {"status": status})).json()["error"]
    assert error["code"] == -32602
    assert repr(status) in error["message"] and "TASK_STATE_WORKING" in error["message"]
    assert "TASK_STATE_INPUT_REQUIRED" in error["message"]


async def test_a_finished_task_cannot_be_cancelled(server: InProcess) -> None:
    """CancelTask on a completed task is A2A's not-cancelable error."""
    async with server.client() as client:
        done = task_of(await send(client, user_message("list")))
        error = (await rpc(client, "files", "CancelTask", {"id": done["id"]})).json()["error"]
    assert error["code"] == -32002 and "completed" in error["message"]


@pytest.mark.parametrize("method", ["GetTask", "CancelTask", "SubscribeToTask"])
async def test_a_call_without_a_task_id_is_invalid_params_not_task_not_found(server: InProcess, method: str) -> None:
    """A task call that leaves `id` out is a malformed request (-32602 naming the id), not an unknown task."""
    async with server.client() as client:
        error = (await rpc(client, "files", method, {})).json()["error"]
    assert error["code"] == -32602 and "no task id" in error["message"]


# --- every entry served (must hold 2)


async def test_an_orchestration_is_served_under_its_name_and_is_the_root_card(serve: ServerFactory) -> None:
    """kaboo's `orchestrations: {team: ...}` with `entry: team` serves /a2a/team with its own card, the root card
    names it, and the a2a-sdk client reaches the team's lead from the root card."""
    server = await serve(config=load_config(TEAM))
    async with server.client() as http:
        root = (await http.get("/.well-known/agent-card.json")).json()
        team = (await http.get("/a2a/team/.well-known/agent-card.json")).json()
        member = (await http.get("/a2a/analyst/.well-known/agent-card.json")).json()
        assert root == team and root["name"] == "team"
        assert root["supportedInterfaces"][0]["url"] == f"{http.base_url}/a2a/team"
        assert member["name"] == "analyst"
        client = await sdk_client(http, streaming=False)
        events = await collect(client, sdk_message("report"))
        await client.close()
    last = events[-1]
    task = last.task if last.HasField("task") else None
    assert task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    run = await server.sayso.run_record(task.id)
    assert run.agent == "coordinator", "the team's lead answers"


# --- subscribing to a task


async def subscribe(
    client: httpx.AsyncClient, task_id: str, method: str = "SubscribeToTask", version: str = "1.0"
) -> list[dict[str, Any]]:
    """A subscription over raw JSON-RPC: each JSON-RPC body it answers, as SSE events or one plain response."""
    body = {"jsonrpc": "2.0", "id": "sub", "method": method, "params": {"id": task_id}}
    headers = {"A2A-Version": version, "A2A-Extensions": URI}
    async with client.stream("POST", "/a2a/files", json=body, headers=headers) as response:
        if not response.headers["content-type"].startswith("text/event-stream"):
            return [json.loads(await response.aread())]
        return [json.loads(line[5:]) async for line in response.aiter_lines() if line.startswith("data:")]


@pytest.mark.parametrize(
    ("method", "version"), [("SubscribeToTask", "1.0"), ("tasks/resubscribe", "0.3")], ids=["1.0", "0.3"]
)
async def test_subscribing_to_a_finished_task_is_unsupported_as_a2a_says(
    server: InProcess, method: str, version: str
) -> None:
    """A completed task has nothing more to stream: A2A's unsupported-operation error naming its state, as the
    a2a-sdk's own handler answers, and no Task or status update."""
    async with server.client() as client:
        done = task_of(await send(client, user_message("list")))
        answered = await subscribe(client, done["id"], method, version)
    (only,) = answered
    assert "result" not in only, only
    assert only["error"]["code"] == -32004
    assert only["error"]["message"] == f"Task {done['id']} is in terminal state: TASK_STATE_COMPLETED"


async def test_subscribing_to_a_paused_task_sends_its_status_once(server: InProcess) -> None:
    """A task waiting on an approval stays as it is until answered: the subscription answers the Task, whose status
    says it waits, and nothing more (not the same status again as an update)."""
    async with server.client() as client:
        waiting = await paused(client)
        answered = await subscribe(client, waiting["id"])
    (only,) = answered
    task = only["result"]["task"]
    assert task["id"] == waiting["id"] and task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
