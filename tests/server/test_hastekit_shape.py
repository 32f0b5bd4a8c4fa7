"""hastekit's shape of a paused run (seed 002, issue 23): `mode` and `is_nested` on every request, its rejection text.

Through Python and REST: every request says what it asks for (`approval`, `form`, `url`) and whether
an agent below the top-level run raised it, and an agent may make the model read hastekit's (or
kagent's, or its own) words when a call is rejected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart

from sayso import (
    AgentConfig,
    ApprovalRequest,
    Config,
    InterruptConfig,
    QuestionRequest,
    Reject,
    RejectionTextConfig,
    Sayso,
    load_config,
)

from ..conftest import ROOT
from ..models import calls_then_reply
from ..tools import delete_file, deleted
from .conftest import InProcess, ServerFactory, helper_models

TEAM = ROOT / "examples" / "team" / "sayso.yaml"
CONCIERGE = ROOT / "examples" / "concierge" / "sayso.yaml"


async def test_the_inbox_says_each_requests_mode_and_whether_a_delegate_raised_it(serve: ServerFactory) -> None:
    """A delegate's question and approval come up as `is_nested: true`, with modes `form` and `approval`."""
    server = await serve(config=load_config(TEAM))
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "report"})).json()
        inbox = (await client.get("/v1/requests")).json()["requests"]
        one = (await client.get(f"/v1/requests/{inbox[0]['id']}")).json()
    shown = sorted((r["agent_path"], r["kind"], r["mode"], r["is_nested"]) for r in inbox)
    assert shown == [
        ("coordinator/analyst", "question", "form", True),
        ("coordinator/ops", "approval", "approval", True),
    ]
    assert sorted((r["mode"], r["is_nested"]) for r in run["requests"]) == [("approval", True), ("form", True)]
    assert (one["request"]["mode"], one["request"]["is_nested"]) == (inbox[0]["mode"], True)

    [request] = [r for r in (await server.sayso.result(run["run_id"])).requests if isinstance(r, ApprovalRequest)]
    assert (request.mode, request.is_nested) == ("approval", True)


async def test_a_top_level_request_is_not_nested_and_each_kind_has_its_mode(
    server: InProcess, serve: ServerFactory, helper_config: Config
) -> None:
    """The top-level agent's own approval, question and client tool are not nested; their modes are hastekit's."""
    async with server.client() as client:
        question = (await client.post("/v1/runs", json={"message": "delete report"})).json()["requests"][0]
        approval = (await client.post("/v1/runs", json={"message": "delete notes"})).json()["requests"][0]
    helper = await serve(config=helper_config, models=helper_models())
    async with helper.client() as client:
        tools = [{"name": "get_location", "description": "Where the person is", "parameters": {"type": "object"}}]
        located = await client.post("/v1/runs", json={"message": "locate", "client_tools": tools})
        client_tool = located.json()["requests"][0]
    assert [(r["kind"], r["mode"], r["is_nested"]) for r in (question, approval, client_tool)] == [
        ("question", "form", False),
        ("approval", "approval", False),
        ("client_tool", "form", False),
    ]
    [asked] = (await server.sayso.result(question["run_id"])).requests
    assert isinstance(asked, QuestionRequest)
    assert (asked.mode, asked.is_nested) == ("form", False)


async def test_a_workflow_input_is_a_form(serve: ServerFactory) -> None:
    """A workflow's input asks for data: mode `form`, raised by the workflow itself (not nested)."""
    server = await serve(config=load_config(CONCIERGE))
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "Plan my day", "agent": "concierge"})).json()
    [request] = run["requests"]
    assert (request["kind"], request["mode"], request["is_nested"]) == ("input", "form", False)


# --- what the model reads on a rejection (interrupt.rejection_text)


def gated(rejection_text: Any, tmp_path: Path) -> Sayso:
    config = Config(
        store=f"sqlite:///{tmp_path / 'sayso.db'}",
        agents={
            "files": AgentConfig(
                model="m",
                tools=[delete_file],
                interrupt=InterruptConfig(tools=["delete_file"], rejection_text=rejection_text),
            )
        },
        base_dir=tmp_path,
    )
    return Sayso(config, models={"m": calls_then_reply(("delete_file", {"name": "notes.txt"}), reply="ok")})


async def read_on_rejection(sayso: Sayso, reason: str | None) -> Any:
    async with sayso:
        paused = await sayso.run("delete notes")
        done = await sayso.decide(paused.requests[0].request_id, Reject(reason=reason))
        [returned] = [
            p.content
            for m in await sayso.messages(done.run.thread_id)
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
    assert deleted() == []  # a rejected call never runs
    return returned


@pytest.mark.parametrize(
    ("wording", "reason", "read"),
    [
        pytest.param("sayso", None, "Declined by the person.", id="sayso"),
        pytest.param("sayso", "not today", "Declined: not today", id="sayso-reason"),
        pytest.param("hastekit", None, "Request to call this tool has been declined", id="hastekit"),
        pytest.param(
            "hastekit", "not today", "Request to call this tool has been declined: not today", id="hastekit-reason"
        ),
        pytest.param("kagent", None, "Tool call was rejected by user.", id="kagent"),
        pytest.param("kagent", "not today", "Tool call was rejected by user. Reason: not today", id="kagent-reason"),
        pytest.param(RejectionTextConfig(text="No."), "later", "No. Reason: later", id="own"),
        pytest.param({"text": "No.", "with_reason": "No ({reason})."}, "later", "No (later).", id="own-template"),
    ],
)
async def test_the_model_reads_the_agents_rejection_wording(
    tmp_path: Path, wording: Any, reason: str | None, read: str
) -> None:
    assert await read_on_rejection(gated(wording, tmp_path), reason) == read


def test_a_wording_with_reason_must_place_the_reason() -> None:
    with pytest.raises(ValueError, match="with_reason"):
        InterruptConfig.model_validate({"rejection_text": {"text": "No.", "with_reason": "No."}})
    with pytest.raises(ValueError, match="rejection_text"):
        InterruptConfig.model_validate({"rejection_text": "polite"})
