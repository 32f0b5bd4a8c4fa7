"""How a server's questions reach pydantic-ai's MCP client, pinned against a real fastmcp server over streamable HTTP.

These are the facts the elicitation pause is built on (docs/guides/mcp.md#when-a-server-asks-the-person): which session
mode carries which
kind of question to the `elicitation_handler`, how long a handler may wait, how the
URL-elicitation-required error arrives, and that a task parked on `input_required` can be
answered from another connection. Every answer the handler gives goes through sayso's mapping.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import anyio
import httpx
import mcp_types
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import ToolTask
from fastmcp_tasks.client_models import ClientCreateTaskResult
from mcp import MCPError
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset

from sayso import Accept, Decision, ElicitationRequest
from sayso._engine.mcp.elicit import Elicitation, from_params, to_elicit_result, url_required

from .conftest import ElicitServer


@pytest.fixture
def server_url(elicit_server: ElicitServer) -> str:
    """The test server's base URL."""
    return elicit_server.base_url


class Person:
    """An elicitation handler that turns each question into a sayso request and answers it with a sayso decision."""

    def __init__(self, *answers: Decision, server: str = "booking") -> None:
        self.answers = list(answers)
        self.server = server
        self.asked: list[Elicitation] = []
        self.released = anyio.Event()
        self.waiting = anyio.Event()
        """Set once the handler waits for `released`."""
        self.wait_for_release = False

    async def __call__(self, message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult:
        asked = from_params(params, server=self.server)
        self.asked.append(asked)
        if self.wait_for_release:
            self.waiting.set()
            await self.released.wait()
        request = ElicitationRequest(
            request_id="req",
            run_id="run",
            thread_id="thr",
            agent_path="a",
            tool_call_id="call",
            tool_name="t",
            created_at=0.0,
            **asdict(asked),
        )
        return to_elicit_result(request, self.answers.pop(0))


PARTY = Accept(content={"people": 2, "name": "Ada"})


def legacy(url: str, person: Person, *, timeout: float | None = None) -> MCPToolset[Any]:
    """A toolset on a handshake-era session, where the server can ask mid-call (`MCPToolset` cannot choose the mode)."""
    return MCPToolset(
        Client(StreamableHttpTransport(f"{url}/mcp"), mode="legacy", elicitation_handler=person, timeout=timeout)
    )


async def test_a_form_pushed_mid_call_reaches_the_handler_on_a_handshake_era_session(server_url: str) -> None:
    """`ctx.elicit` reaches a legacy-mode client's handler with message and schema, and the answer goes back."""
    person = Person(PARTY)
    async with legacy(server_url, person) as toolset:
        result = await toolset.direct_call_tool("book_table", {"day": "fri"})
    assert result == "Booked fri for 2 (Ada)"
    [asked] = person.asked
    assert asked.mode == "form"
    assert asked.message == "Booking for fri: how many people, and under which name?"
    assert asked.requested_schema is not None and asked.requested_schema["required"] == ["people", "name"]


async def test_a_handler_may_wait_for_the_person_as_long_as_the_clients_timeout_allows(server_url: str) -> None:
    """The live call waits while the handler awaits the person; a client `timeout` cuts it, `None` does not: a call
    without one is still waiting when a call asked after it, with a half-second timeout, has been cut."""
    patient = Person(PARTY)
    patient.wait_for_release = True
    hurried = Person(PARTY)
    hurried.wait_for_release = True
    async with legacy(server_url, patient, timeout=None) as toolset, anyio.create_task_group() as tg:

        async def hurry_then_release() -> None:
            with anyio.fail_after(30):
                await patient.waiting.wait()
                async with legacy(server_url, hurried, timeout=0.5) as other:
                    with pytest.raises(ModelRetry, match="timed out"):
                        await other.direct_call_tool("book_table", {"day": "sun"})
            patient.released.set()

        tg.start_soon(hurry_then_release)
        assert await toolset.direct_call_tool("book_table", {"day": "sat"}) == "Booked sat for 2 (Ada)"


async def test_the_default_modern_session_cannot_push_a_form_but_carries_a_stateless_round_trip(
    server_url: str,
) -> None:
    """`MCPToolset(url)` negotiates a stateless session: `ctx.elicit` fails, a guard tool's round trip works."""
    person = Person(PARTY)
    async with MCPToolset(f"{server_url}/mcp", elicitation_handler=person) as toolset:
        with pytest.raises(ModelRetry, match="server-initiated requests is unavailable"):
            await toolset.direct_call_tool("book_table", {"day": "fri"})
        assert person.asked == []
        result = await toolset.direct_call_tool("book_table_guarded", {"day": "sat"})
    assert result == "Booked sat for 2 (Ada)"
    assert [a.message for a in person.asked] == ["Booking for sat: how many people, and under which name?"]


async def test_a_url_pushed_mid_call_reaches_the_handler_and_done_is_accept(server_url: str) -> None:
    """A URL-mode `elicitation/create` brings message, URL and the server's id; "done" answers accept."""
    person = Person(Accept())
    async with legacy(server_url, person) as toolset:
        assert await toolset.direct_call_tool("sign_in", {}) == "sign-in accept"
    [asked] = person.asked
    assert (asked.mode, asked.url, asked.elicitation_id) == ("url", f"{server_url}/login?user=ada", "login-1")


async def test_url_elicitation_required_arrives_as_a_model_retry_and_the_retry_succeeds_after_the_visit(
    server_url: str,
) -> None:
    """-32042 arrives as `ModelRetry` caused by the `MCPError`; sayso reads the URL; after the visit the call works."""
    async with MCPToolset(f"{server_url}/mcp") as toolset:
        with pytest.raises(ModelRetry) as refused:
            await toolset.direct_call_tool("crm_contacts", {})
        [page] = url_required(refused.value, server="crm") or []
        assert (page.mode, page.message, page.elicitation_id) == ("url", "Sign in to the CRM first", "login-2")
        assert page.url is not None
        # The person completes it out of band.
        assert httpx.get(page.url).text == "signed in"
        assert await toolset.direct_call_tool("crm_contacts", {}) == "Ada Lovelace, Charles Babbage"


async def test_a_task_parked_on_input_required_is_answered_from_another_connection(server_url: str) -> None:
    """A tasked call returns its task id at once; another client (another process, say) answers it by id."""
    first = Client(StreamableHttpTransport(f"{server_url}/mcp"))
    async with first:
        task = await call_tool_task(first, "approve_refund", {"amount": 5})
        parked = await task.wait(state="input_required", timeout=30)
        stored = task.create_result.model_dump(mode="json", by_alias=True)
    # The server keys the question itself (task id and a hash), not by the tool's own key.
    [asked] = (parked.input_requests or {}).values()
    question = from_params(mcp_types.ElicitRequest.model_validate(asked).params, server="shop")
    assert question.message == "Why refund 5?"

    person = Person(Accept(content={"reason": "broken on arrival"}), server="shop")
    second = Client(StreamableHttpTransport(f"{server_url}/mcp"), elicitation_handler=person)
    async with second:
        resumed = ToolTask(second, "approve_refund", ClientCreateTaskResult.model_validate(stored))
        result = await resumed.result()
    assert result.data == "Refunded 5: broken on arrival"
    assert [a.message for a in person.asked] == ["Why refund 5?"]


async def test_a_handler_that_cannot_answer_yet_aborts_the_call(server_url: str) -> None:
    """Raising in the handler stops a round trip before the server hears anything; a pushed form fails the tool."""

    async def not_yet(message: str, response_type: Any, params: Any, context: Any) -> mcp_types.ElicitResult:
        raise LookupError("no stored answer yet")

    async with MCPToolset(f"{server_url}/mcp", elicitation_handler=not_yet) as toolset:
        with pytest.raises(ModelRetry, match="no stored answer yet") as stateless:
            await toolset.direct_call_tool("book_table_guarded", {"day": "fri"})
    # The client's own driver gave up (an `MCPError` it raised), so the server's tool never ran past its question.
    assert isinstance(stateless.value.__cause__, MCPError)
    pushed = MCPToolset(
        Client(StreamableHttpTransport(f"{server_url}/mcp"), mode="legacy", elicitation_handler=not_yet)
    )
    async with pushed:
        with pytest.raises(ModelRetry, match="Error calling tool 'book_table': no stored answer yet"):
            await pushed.direct_call_tool("book_table", {"day": "fri"})
