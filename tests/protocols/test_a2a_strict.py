"""A2A answers are read strictly: a key nobody defined, or a value of the wrong shape, is refused, never dropped.

A dropped edit would run the call unedited, a dropped reason would tell the model nothing; so
each is an invalid-params error naming what is wrong, the task stays input-required and the
request open, and a correct answer afterwards still decides it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from sayso import Sayso, load_config
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

from ..conftest import InProcess
from .a2a_helpers import PLAIN, SAYSO_KEY, get_task, hitl, rpc, send, task_of, user_message
from .conftest import ServerFactory

CONCIERGE = Path(__file__).resolve().parents[2] / "examples" / "concierge" / "sayso.yaml"


def paused(task: dict[str, Any]) -> tuple[str, str]:
    """The id a client answers the pause with, and sayso's request id behind it (a direct approval's are one)."""
    message = task["status"]["message"]
    if SAYSO_KEY not in message.get("metadata", {}):  # kagent 0.x: the confirmation DataPart's id
        shown_id: str = message["parts"][0]["data"]["id"]
        return shown_id, shown_id
    shown = message["metadata"][SAYSO_KEY]["requests"][0]
    return shown["id"], shown["request_id"]


def answer(task: dict[str, Any], approval: dict[str, Any], extras: Any = None, **payload: Any) -> dict[str, Any]:
    """A v1 approval response to `task`, with `extras` under sayso's key when given."""
    body = {"type": "tool_approval_response", "approvals": [approval], **payload}
    message = user_message("Approved", task_id=task["id"], context_id=task["contextId"], payload=body)
    if extras is not None:
        message["metadata"][SAYSO_KEY] = extras
    return message


async def still_waiting(client: httpx.AsyncClient, task: dict[str, Any], sandbox: Path) -> None:
    """The task waits, its request is open with no decision, and the call did not run."""
    assert (await get_task(client, task["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    _, request_id = paused(task)
    state = (await client.get(f"/v1/requests/{request_id}")).json()
    assert state["status"] == "open" and state.get("decision") is None, state
    assert (sandbox / "notes.txt").exists() and (sandbox / "todo.md").exists()


def refusal(body: dict[str, Any]) -> str:
    assert "error" in body, body
    assert body["error"]["code"] == -32602, body
    message: str = body["error"]["message"]
    return message


CASES = [
    pytest.param(
        {"approvals": {"ID": {"edited_arg": {"name": "todo.md"}}}}, {}, {}, "'edited_arg'", id="misspelled-edit-key"
    ),
    pytest.param("x", {}, {}, SAYSO_KEY, id="sayso-key-not-an-object"),
    pytest.param(["ID"], {}, {}, SAYSO_KEY, id="sayso-key-a-list"),
    pytest.param({"aprovals": {"ID": {"scope": "always"}}}, {}, {}, "'aprovals'", id="misspelled-sayso-key"),
    pytest.param({"approvals": ["ID"]}, {}, {}, "'approvals' must be an object", id="sayso-approvals-a-list"),
]


@pytest.mark.parametrize(("extras", "in_approval", "in_payload", "named"), CASES)
async def test_an_answer_with_a_key_or_shape_nobody_defined_is_refused_and_nothing_runs(
    serve: ServerFactory,
    sandbox: Path,
    extras: Any,
    in_approval: dict[str, Any],
    in_payload: dict[str, Any],
    named: str,
) -> None:
    """A misspelled edit key once ran the original call ("Deleted notes.txt."); now it is refused, naming the key,
    and the same pause then takes a well-formed edit."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        shown_id, _ = paused(task)
        if isinstance(extras, dict) and isinstance(extras.get("approvals"), dict):
            (edit,) = extras["approvals"].values()
            extras = {"approvals": {shown_id: edit}}
        elif isinstance(extras, list):
            extras = [shown_id]
        approval = {"id": shown_id, "approved": True, **in_approval}
        problem = refusal(await send(client, answer(task, approval, extras, **in_payload)))
        assert named in problem
        await still_waiting(client, task, sandbox)
        edited = {"approvals": {shown_id: {"edited_args": {"name": "todo.md"}}}}
        done = task_of(await send(client, answer(task, {"id": shown_id, "approved": True}, edited)))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (sandbox / "notes.txt").exists() and not (sandbox / "todo.md").exists()


async def test_a_kagent_rejection_with_a_null_reason_is_still_kagents_own_shape(serve: ServerFactory) -> None:
    """kagent's own `rejection_reason`, even null, is read as kagent means it: no reason."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        shown_id, _ = paused(task)
        approval = {"id": shown_id, "approved": False, "rejection_reason": None}
        done = task_of(await send(client, answer(task, approval)))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_an_edit_for_a_question_is_refused(serve: ServerFactory, sandbox: Path) -> None:
    """Edits under sayso's key go with approvals: sent with a question's answer they are refused, not dropped."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete report")))
        asked = hitl(task["status"]["message"])
        assert asked["type"] == "ask_user_request"
        body = {"type": "ask_user_response", "id": asked["id"], "answers": [{"answer": ["report-q1.txt"]}]}
        message = user_message(task_id=task["id"], context_id=task["contextId"], payload=body)
        message["metadata"][SAYSO_KEY] = {"approvals": {asked["id"]: {"scope": "always"}}}
        assert "edit approvals" in refusal(await send(client, message))
        assert (await get_task(client, task["id"]))["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_answers_that_lose_a_race_are_not_told_the_task_still_waits(serve: ServerFactory, sandbox: Path) -> None:
    """Six different answers to one pause sent at once: one decides, and no refusal claims the task still waits, since
    it went on with the first decision and finished."""
    server = await serve()
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes")))
        shown_id, _ = paused(task)
        edit = {"approvals": {shown_id: {"edited_args": {"name": "todo.md"}}}}
        answers = [
            answer(task, {"id": shown_id, "approved": True}),
            answer(task, {"id": shown_id, "approved": True}, edit),
            *(answer(task, {"id": shown_id, "approved": False, "rejection_reason": r}) for r in "abcd"),
        ]
        bodies = await asyncio.gather(*(send(client, message) for message in answers))
        state = (await get_task(client, task["id"]))["status"]["state"]
    refusals = [body["error"]["message"] for body in bodies if "error" in body]
    assert len(refusals) == 5 and not [r for r in refusals if "still waits" in r], refusals
    assert state == "TASK_STATE_COMPLETED"
    assert (sandbox / "notes.txt").exists() or (sandbox / "todo.md").exists()  # one call at most ran


# --- kagent 0.x (compat mode): a rejection reason is a string


@pytest.mark.parametrize(
    ("decision", "named"),
    [
        pytest.param({"decision_type": "reject", "rejection_reason": 5}, "'rejection_reason'", id="reason-a-number"),
        pytest.param(
            {"decision_type": "reject", "rejection_reason": {"why": "x"}}, "'rejection_reason'", id="reason-an-object"
        ),
        pytest.param(
            {"decision_type": "batch", "decisions": {"CALL": "reject"}, "rejection_reasons": "x"},
            "'rejection_reasons'",
            id="reasons-not-an-object",
        ),
        pytest.param(
            {"decision_type": "batch", "decisions": {"CALL": "reject"}, "rejection_reasons": {"CALL": 5}},
            "rejection_reasons.",
            id="one-reason-a-number",
        ),
    ],
)
async def test_a_legacy_rejection_reason_that_is_not_a_string_is_refused(
    serve: ServerFactory, sandbox: Path, decision: dict[str, Any], named: str
) -> None:
    """kagent 0.x mode once dropped it (the model read "Declined by the person."); v1 and REST refuse it, so does 0.x,
    and the pause then takes the rejection with its reason."""
    server = await serve(a2a={"kagent_compat": True})
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes"), PLAIN))
        (part,) = task["status"]["message"]["parts"]
        call = part["data"]["args"]["originalFunctionCall"]["id"]
        decision = {k: ({call: v["CALL"]} if isinstance(v, dict) and "CALL" in v else v) for k, v in decision.items()}
        problem = refusal(await send(client, user_message("Rejected", task_id=task["id"], data=[decision]), PLAIN))
        assert named in problem
        await still_waiting(client, task, sandbox)
        reject = {"decision_type": "reject", "rejection_reason": "keep it"}
        done = task_of(await send(client, user_message("Rejected", task_id=task["id"], data=[reject]), PLAIN))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        state = (await client.get(f"/v1/requests/{paused(task)[1]}")).json()
    assert state["decision"]["reason"] == "keep it"
    assert (sandbox / "notes.txt").exists()


async def test_an_edit_under_saysos_key_beside_a_legacy_decision_is_refused(
    serve: ServerFactory, sandbox: Path
) -> None:
    """kagent 0.x has no room for an edit: one sent beside a 0.x approve is refused, not dropped (the call would run
    unedited)."""
    server = await serve(a2a={"kagent_compat": True})
    async with server.client() as client:
        task = task_of(await send(client, user_message("delete notes"), PLAIN))
        shown_id, _ = paused(task)
        message = user_message("Approved", task_id=task["id"], data=[{"decision_type": "approve"}])
        message["metadata"] = {SAYSO_KEY: {"approvals": {shown_id: {"edited_args": {"name": "todo.md"}}}}}
        assert "v1 tool_approval_response" in refusal(await send(client, message, PLAIN))
        await still_waiting(client, task, sandbox)


# --- a workflow's input


async def test_a_workflows_input_answer_with_an_edit_is_refused() -> None:
    """An input's answer is kagent's `ask_user_response`: an edit under sayso's key beside it (an input has nothing
    to edit) is refused and the workflow still waits for the answer."""
    sayso = Sayso(load_config(CONCIERGE))
    server = await InProcess(
        app=create_app(sayso, routers=[a2a_router(sayso)], expire_every_seconds=None), sayso=sayso
    ).start()
    try:
        async with server.client() as client:
            message = user_message("Plan my day")
            started = await rpc(client, "concierge", "SendMessage", {"message": message})
            task = task_of(started.json())
            asked = hitl(task["status"]["message"])
            good = ["Lisbon"], ["41"], ["fado"], ["-"], ["packed"]
            body = {"type": "ask_user_response", "id": asked["id"], "answers": [{"answer": w} for w in good]}
            reply = user_message(task_id=task["id"], context_id=task["contextId"], payload=body)
            reply["metadata"][SAYSO_KEY] = {"approvals": {asked["id"]: {"scope": "always"}}}
            refused = (await rpc(client, "concierge", "SendMessage", {"message": reply})).json()
            assert "edit approvals" in refusal(refused)
            state = (await rpc(client, "concierge", "GetTask", {"id": task["id"]})).json()["result"]["status"]["state"]
            assert state == "TASK_STATE_INPUT_REQUIRED"
            reply = user_message(task_id=task["id"], context_id=task["contextId"], payload=body)
            taken = task_of((await rpc(client, "concierge", "SendMessage", {"message": reply})).json())
        assert taken["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # the next input: the review
        assert hitl(taken["status"]["message"])["id"] != asked["id"]
    finally:
        await server.stop()
