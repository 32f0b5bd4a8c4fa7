"""What the caller of `Sayso.run` chooses (the thread's id, the client tools) is refused before anything is written.

The rule is the start verb's, so Python, REST, AG-UI and MCP refuse the same thread ids and tools; a thread stored
under a name that is no id, or a tool the store cannot read back with its run, would break the thread for good.
"""

from __future__ import annotations

from typing import Any

import pytest

from sayso import ClientTool, InvalidInput, Sayso

from .conftest import MakeApp
from .models import tool_model

TEXT: Any = "notschema"
ARRAY: Any = [1]
"""Parameters that are no JSON object, as an untyped caller may pass them."""

PICK = ClientTool(name="pick_color", description="Let the person pick a colour.", parameters={"type": "object"})


@pytest.fixture
async def app(make_app: MakeApp) -> Any:
    model = tool_model(lambda said: ("pick_color", {}) if said == "pick" else "Hello.", read="Picked {result}.")
    async with make_app({"helper": {"model": "m", "client_tools": ["pick_color"]}}, model=model) as app:
        yield app


@pytest.mark.parametrize(
    "thread_id",
    [
        pytest.param("", id="empty"),
        pytest.param("a\x00b", id="nul"),
        pytest.param("a b/<script>", id="markup"),
        pytest.param("t" * 5_000, id="long"),
        pytest.param("thr-1\n", id="trailing-newline"),
    ],
)
async def test_a_thread_id_that_is_no_id_is_refused_and_no_thread_is_stored(app: Sayso, thread_id: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        await app.run("hello", thread_id=thread_id)
    assert refused.value.field == "thread_id" and "is not a thread id" in refused.value.problem
    assert len(str(refused.value)) < 300, "a long id is not said back whole"
    assert await app.threads() == []


async def test_a_thread_id_that_is_an_id_names_the_thread(app: Sayso) -> None:
    result = await app.run("hello", thread_id="chat:2026-12.a_b-c")
    assert result.thread_id == "chat:2026-12.a_b-c" and result.output == "Hello."


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        pytest.param([ClientTool(name="pick_color", parameters=TEXT)], "parameters must be a JSON Schema object"),
        pytest.param([ClientTool(name="pick_color", parameters=ARRAY)], "not an array"),
        pytest.param(
            [ClientTool(name="pick_color", parameters={"type": "object", "properties": {"a": {"type": 5}}})],
            "properties.a.type",
        ),
        pytest.param([ClientTool(name="pick_color", parameters={"$schema": 5})], "$schema"),
        pytest.param([ClientTool(name="pick_color", parameters={"default": float("nan")})], "not JSON"),
        pytest.param([ClientTool(name="pick color")], "is not a tool name"),
        pytest.param([ClientTool(name="x" * 65)], "is not a tool name"),
        pytest.param([PICK, PICK], "two client tools are named 'pick_color'"),
        pytest.param([ClientTool(name="pick_color", description="d" * 2_001)], "the limit is 2000"),
        pytest.param([ClientTool(name="pick_color", context="c" * 20_001)], "the limit is 20000"),
        pytest.param([ClientTool(name="pick_color", description="a\x00b")], "NUL character"),
        pytest.param([ClientTool(name="pick_color", context="\ud800")], "lone surrogate"),
        pytest.param([ClientTool(name=f"t{i}") for i in range(65)], "at most 64"),
        pytest.param([{"name": "pick_color"}], "not a ClientTool"),
    ],
)
async def test_a_client_tool_that_does_not_fit_is_refused_and_nothing_is_stored(
    app: Sayso, tools: list[ClientTool], said: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        await app.run("pick", thread_id="thr-tools", client_tools=tools)
    assert refused.value.field == "client_tools" and said in refused.value.problem
    assert await app.threads() == []


async def test_a_refused_tool_leaves_a_paused_thread_as_it_was(app: Sayso) -> None:
    """A second message that would supersede the pause is refused first: the pause stays open and is answered."""
    paused = await app.run("pick", thread_id="thr-paused", client_tools=[PICK])
    assert paused.status == "paused"
    with pytest.raises(InvalidInput):
        await app.run("hello", thread_id="thr-paused", client_tools=[ClientTool(name="pick_color", parameters=ARRAY)])
    still = await app.result(paused.run_id)
    assert still.status == "paused" and [r.request_id for r in still.requests] == [paused.requests[0].request_id]


async def test_every_draft_s_schema_is_taken(app: Sayso) -> None:
    """Parameters in the draft their `$schema` names (draft 7 here) are checked by that draft, and taken."""
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"palette": {"type": "array", "items": [{"type": "string"}]}},
    }
    result = await app.run("pick", client_tools=[ClientTool(name="pick_color", parameters=draft7)])
    assert result.status == "paused"
