"""AG-UI inputs sayso cannot take: refused with an error naming the problem, nothing stored, a pause left open.

A client tool that is no tool (parameters that are no JSON Schema object, a name no model takes), a thread
id that is no id, a resume payload with a key sayso does not read or a reason that is not text: each once
reached the store or was read as something the person never said.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from .conftest import InProcess, ServerFactory
from .test_ag_ui import finished, interrupt_of, post, resume, run_input, user


async def threads(server: InProcess) -> list[Any]:
    async with server.client() as client:
        listed = await client.get("/v1/threads")
    assert listed.status_code == 200
    return list(listed.json()["threads"])


TOOL = {"name": "pick_color", "description": "Ask the browser for a color", "parameters": {"type": "object"}}


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        pytest.param([{**TOOL, "parameters": "notschema"}], "parameters must be a JSON Schema object", id="text"),
        pytest.param([{**TOOL, "parameters": 5}], "parameters must be a JSON Schema object", id="number"),
        pytest.param([{**TOOL, "parameters": [1]}], "parameters must be a JSON Schema object", id="array"),
        pytest.param(
            [{**TOOL, "parameters": {"type": "nope"}}], "parameters are not a valid JSON Schema", id="no-schema"
        ),
        pytest.param([{**TOOL, "name": "pick color"}], "is not a tool name", id="name"),
        pytest.param([TOOL, TOOL], "two client tools are named 'pick_color'", id="twice"),
        pytest.param([{**TOOL, "description": "d" * 2001}], "the limit is 2000", id="long-description"),
        pytest.param(
            [{**TOOL, "name": f"t{i}"} for i in range(65)], "65 client tools declared; at most 64", id="too-many"
        ),
    ],
)
async def test_a_client_tool_that_is_no_tool_is_refused_and_nothing_is_stored(
    serve: ServerFactory, tools: list[dict[str, Any]], said: str
) -> None:
    """The run is refused with a RUN_ERROR naming the tool's problem; no thread is stored, and the server reads fine."""
    server = await serve()
    events = await post(server, run_input("t-poison-1", [user("delete notes")], tools=tools))
    assert [e.type for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1].code == "invalid_input" and said in events[-1].message
    assert await threads(server) == []
    async with server.client() as client:
        assert (await client.get("/v1/threads/t-poison-1")).status_code == 404


async def test_context_over_its_size_is_refused(serve: ServerFactory) -> None:
    """The context entries naming a tool are its context: more than 20,000 characters of it is refused."""
    server = await serve()
    context = [{"description": "pick_color", "value": "c" * 20_001}]
    events = await post(server, run_input("t-context", [user("delete notes")], tools=[TOOL], context=context))
    assert events[-1].type == "RUN_ERROR" and "its context has 20001 characters" in events[-1].message
    assert await threads(server) == []


async def test_a_tool_without_parameters_takes_an_object(serve: ServerFactory, sandbox: Path) -> None:
    """A tool with no `parameters` (AG-UI makes them optional) is declared as taking an object: the run goes on."""
    server = await serve()
    bare = {"name": "pick_color", "description": "Ask the browser for a color"}
    events = await post(server, run_input("t-bare", [user("delete notes")], tools=[bare]))
    assert interrupt_of(events).metadata["tool_name"] == "delete_file"


@pytest.mark.parametrize(
    "thread_id",
    [
        pytest.param("", id="empty"),
        pytest.param("a b/<script>", id="markup"),
        pytest.param("a\u0000b", id="nul"),
        pytest.param("t" * 100_000, id="long"),
    ],
)
async def test_a_thread_id_that_is_no_id_is_a_problem_before_any_stream(serve: ServerFactory, thread_id: str) -> None:
    """A `threadId` REST would refuse is refused as REST refuses it (422, naming the field); no thread is stored."""
    server = await serve()
    async with server.client() as client:
        response = await client.post("/ag-ui/files", json=run_input(thread_id, [user("delete notes")]))
    assert (response.status_code, response.headers["content-type"]) == (422, "application/problem+json")
    assert response.json()["errors"][0]["loc"] == ["body", "threadId"]
    assert await threads(server) == []


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        pytest.param(
            {"status": "approved", "toolInput": {"name": "todo.md"}}, "'toolInput' is not a key", id="camel-case"
        ),
        pytest.param({"status": "approved", "scopes": "always"}, "'scopes' is not a key", id="misspelled"),
        pytest.param({"status": "cancelled", "reason": 5}, "reason must be text", id="reason-not-text"),
        pytest.param({"status": "cancelled", "reason": ["no"]}, "reason must be text", id="reason-a-list"),
    ],
)
async def test_a_payload_sayso_cannot_read_whole_is_refused_and_the_pause_stays_open(
    serve: ServerFactory, sandbox: Path, payload: dict[str, Any], said: str
) -> None:
    """An approval's payload with a key sayso does not read, or a reason that is not text, is refused: the
    original call does not run, nothing is decided, and the pause is answered as usual afterwards."""
    server = await serve()
    pending = interrupt_of(await post(server, run_input("thr-keys", [user("delete notes")])))
    events = await post(server, resume("thr-keys", [{"interruptId": pending.id, "status": "resolved", **_p(payload)}]))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "invalid_resume"
    assert said in events[-1].message and "the pause stays open" in events[-1].message
    assert (sandbox / "notes.txt").exists()
    async with server.client() as client:
        run = (await client.get(f"/v1/runs/{pending.metadata['run_id']}")).json()
    assert run["status"] == "paused" and [r["id"] for r in run["requests"]] == [pending.id]
    denied = {"status": "cancelled", "reason": "keep it"}
    events = await post(server, resume("thr-keys", [{"interruptId": pending.id, "status": "resolved", **_p(denied)}]))
    result = next(e for e in events if e.type == "TOOL_CALL_RESULT" and e.tool_call_id == pending.tool_call_id)
    assert result.content == "Declined: keep it"
    assert finished(events).outcome.type == "success"  # type: ignore[union-attr]
    assert (sandbox / "notes.txt").exists()


def _p(payload: dict[str, Any]) -> dict[str, Any]:
    return {"payload": payload}


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param({"status": "cancelled", "payload": {"reason": 5}}, id="reason-not-text"),
        pytest.param({"status": "cancelled", "payload": {"why": "later"}}, id="unknown-key"),
        pytest.param({"status": "resolved", "payload": {"answers": [{"answer": ["x"]}]}}, id="a-question's-key"),
    ],
)
async def test_a_skip_or_an_answer_of_another_kind_with_keys_sayso_does_not_read_is_refused(
    serve: ServerFactory, sandbox: Path, entry: dict[str, Any]
) -> None:
    """A skip's payload may carry only a text `reason`; an approval is not answered with a question's keys."""
    server = await serve()
    pending = interrupt_of(await post(server, run_input("thr-skip-keys", [user("delete notes")])))
    events = await post(server, resume("thr-skip-keys", [{"interruptId": pending.id, **entry}]))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "invalid_resume"
    assert (sandbox / "notes.txt").exists()
    approved = {"interruptId": pending.id, "status": "resolved", "payload": {"status": "approved"}}
    assert finished(await post(server, resume("thr-skip-keys", [approved]))).outcome.type == "success"  # type: ignore[union-attr]
    assert not (sandbox / "notes.txt").exists()


async def test_the_loser_of_two_resumes_sent_at_once_is_not_told_the_pause_stays_open(
    serve: ServerFactory, sandbox: Path
) -> None:
    """Two clients answer the same interrupt at once (one approves, one denies): one answer carries the run on;
    the other is refused, and since the run went on its error does not claim the pause stays open."""
    server = await serve()
    for n, name in enumerate(["notes", "todo", "report-2025.txt"]):
        thread = f"thr-race-{n}"
        said = user(f"delete {name}")
        asked = interrupt_of(await post(server, run_input(thread, [said])))
        answers = [{"status": "approved"}, {"status": "cancelled", "reason": "keep it"}]
        both = await asyncio.gather(
            *(
                post(server, resume(thread, [{"interruptId": asked.id, "status": "resolved", "payload": p}]))
                for p in answers
            )
        )
        ends = sorted(events[-1].type for events in both)
        assert ends == ["RUN_ERROR", "RUN_FINISHED"], [events[-1] for events in both]
        [refused] = [events[-1] for events in both if events[-1].type == "RUN_ERROR"]
        assert "the pause stays open" not in refused.message, refused.message
        async with server.client() as client:
            state = (await client.get(f"/v1/requests/{asked.id}")).json()
        assert state["status"] == "decided"


async def test_a_history_over_request_bytes_is_a_413_saying_what_the_limit_means_for_ag_ui(
    serve: ServerFactory,
) -> None:
    """An AG-UI client sends the thread's whole history with every run, so a thread whose every message is short
    stops taking messages once its history passes `request_bytes`. The body limit still refuses it before it is
    read (it guards the parser), and its 413 now says why a conversation outgrew it and which limit to raise."""
    server = await serve(limits={"request_bytes": 3000})
    assert finished(await post(server, run_input("t-long", [user("list")])))
    history = [user(f"list {n} " + "x" * 180) for n in range(20)]
    async with server.client() as client:
        refused = await client.post("/ag-ui/files", json=run_input("t-long", history))
        rest = await client.post("/v1/threads", json={"message": "x" * 4000})
    assert refused.status_code == 413
    detail = refused.json()["detail"]
    assert detail.startswith("the request body is larger than the limit of 3000 bytes")
    assert "an AG-UI client sends the thread's whole history with every run" in detail
    assert "raise limits.request_bytes" in detail
    assert rest.status_code == 413 and "AG-UI" not in rest.json()["detail"]
