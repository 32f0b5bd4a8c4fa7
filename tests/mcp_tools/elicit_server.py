"""A fastmcp server that asks the person things, over streamable HTTP: `python elicit_server.py PORT`
(or over stdio: `python elicit_server.py stdio PIDFILE`).

Every way an MCP server can ask is here, so the tests pin how each reaches a client:

- `book_table`: a form pushed mid-call with `ctx.elicit` (handshake-era sessions only);
- `book_table_guarded`: the same form as a stateless round trip (SEP-2322): the tool returns an
  `InputRequiredResult` and reads the answer when the client calls again;
- `sign_in`: a URL pushed mid-call (`elicitation/create` in URL mode);
- `crm_contacts`: refuses with the URL-elicitation-required error (-32042) until `/login` was visited;
- `approve_refund`: a background task (fastmcp-tasks) that parks on `input_required` with a form;
- `refund_later`: the same, but a task on every call (`task=required`), so even a plain call parks;
- `quote`: a read-only tool that pushes a form mid-call;
- `big_report`: no question, a result as large as asked for (over HTTP, one large SSE event);
- `book_slot`: a form pushed mid-call whose fields carry formats (`date-time`, `uri`), which the
  server checks itself when it reads the answer.

What the person's answers did is observable over HTTP: `/bookings` lists the tables booked and
`/answers` every answer a pushed form got (`accept`, `decline`, `cancel`, or `error` when the
client refused to answer), so tests can check what the server heard, and how often.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import mcp_types
import uvicorn
from fastmcp import Context, FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from mcp import UrlElicitationRequiredError
from pydantic import AnyUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse

PARTY_SCHEMA = {
    "type": "object",
    "properties": {
        "people": {"type": "integer", "minimum": 1, "maximum": 12, "title": "People"},
        "name": {"type": "string", "title": "Name for the booking"},
    },
    "required": ["people", "name"],
}


@dataclass
class Party:
    """Who the table is for."""

    people: int
    name: str


@dataclass
class Slot:
    """When the meeting is, and the page to join it at."""

    when: datetime
    page: AnyUrl


mcp = FastMCP("elicit-test")
mcp.add_extension(TasksExtension(url="memory://"))
logged_in: set[str] = set()
bookings: list[str] = []
answers: list[str] = []


async def ask_party(ctx: Context, day: str) -> Party | str:
    """Ask for the party mid-call; the booking itself, or what became of the question."""
    try:
        answer = await ctx.elicit(f"Booking for {day}: how many people, and under which name?", response_type=Party)
    except Exception:
        answers.append("error")
        raise
    answers.append(answer.action)
    if answer.action == "accept":
        return answer.data
    return f"Booking {answer.action}d"


@mcp.tool
async def book_table(day: str, ctx: Context) -> str:
    """Book a table, asking the person how many people and under which name."""
    party = await ask_party(ctx, day)
    if isinstance(party, str):
        return party
    bookings.append(f"{day}:{party.people}:{party.name}")
    return f"Booked {day} for {party.people} ({party.name})"


@mcp.tool
async def book_slot(topic: str, ctx: Context) -> str:
    """Book a meeting, asking the person when and where (a date-time and a URL)."""
    try:
        answer = await ctx.elicit(f"When and where is the meeting about {topic}?", response_type=Slot)
    except Exception:
        answers.append("error")
        raise
    answers.append(answer.action)
    if answer.action != "accept":
        return f"Meeting {answer.action}d"
    bookings.append(f"{topic}:{answer.data.when.isoformat()}:{answer.data.page}")
    return f"Meeting on {topic} at {answer.data.when.isoformat()} on {answer.data.page}"


@mcp.tool(annotations={"readOnlyHint": True})
async def quote(day: str, ctx: Context) -> str:
    """Quote a price for a table, asking the person how many people (changes nothing)."""
    party = await ask_party(ctx, day)
    if isinstance(party, str):
        return party
    return f"A table on {day} for {party.people} costs {party.people * 30} EUR"


@mcp.tool
async def book_table_guarded(day: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Book a table, asking through a stateless round trip (the client calls again with the answer)."""
    responses = ctx.input_responses
    if not responses:
        form = mcp_types.ElicitRequestFormParams(
            message=f"Booking for {day}: how many people, and under which name?", requested_schema=PARTY_SCHEMA
        )
        return mcp_types.InputRequiredResult(
            input_requests={"party": mcp_types.ElicitRequest(params=form)}, request_state=day
        )
    answer = responses["party"]
    assert isinstance(answer, mcp_types.ElicitResult)
    if answer.action != "accept" or answer.content is None:
        return f"Booking {answer.action}d"
    return f"Booked {ctx.request_state} for {answer.content['people']} ({answer.content['name']})"


@mcp.tool
async def sign_in(ctx: Context) -> str:
    """Send the person to the sign-in page and wait until they say they are done."""
    result = await ctx.session.elicit_url(
        message="Sign in to the CRM", url=f"{base_url}/login?user=ada", elicitation_id="login-1"
    )
    return f"sign-in {result.action}"


@mcp.tool
async def crm_contacts() -> str:
    """List the CRM's contacts; `SignInFirst` refuses the call until the person signed in."""
    return "Ada Lovelace, Charles Babbage"


class SignInFirst(Middleware):
    """Refuses `crm_contacts` with the URL-elicitation-required error (-32042) until `/login` was visited.

    A middleware, not the tool body: fastmcp turns what a tool raises into an error result, which
    would lose the error's code and URL.
    """

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        if context.message.name == "crm_contacts" and "ada" not in logged_in:
            raise UrlElicitationRequiredError(
                [
                    mcp_types.ElicitRequestURLParams(
                        message="Sign in to the CRM first", url=f"{base_url}/login?user=ada", elicitation_id="login-2"
                    )
                ]
            )
        return await call_next(context)


mcp.add_middleware(SignInFirst())


async def refund(amount: int, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Refund an order, asking the person for a reason first (answers come back on the task's next leg)."""
    responses = ctx.input_responses
    if not responses:
        form = mcp_types.ElicitRequestFormParams(
            message=f"Why refund {amount}?",
            requested_schema={"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]},
        )
        return mcp_types.InputRequiredResult(input_requests={"reason": mcp_types.ElicitRequest(params=form)})
    answer = responses["reason"]
    assert isinstance(answer, mcp_types.ElicitResult)
    if answer.action != "accept" or answer.content is None:
        return f"Refund {answer.action}d"
    return f"Refunded {amount}: {answer.content['reason']}"


@mcp.tool(task=True)
async def approve_refund(amount: int, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Refund an order in the background, asking the person for a reason first."""
    return await refund(amount, ctx)


@mcp.tool(task=TaskConfig(mode="required"))
async def refund_later(amount: int, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Refund an order as a background task on every call, asking the person for a reason first."""
    return await refund(amount, ctx)


@mcp.tool
async def big_report(size: int) -> str:
    """A report of `size` characters (more than one SSE event of 1 MiB, say)."""
    return "x" * size


@mcp.custom_route("/bookings", methods=["GET"])
async def list_bookings(request: Request) -> JSONResponse:
    """The tables booked so far."""
    return JSONResponse(bookings)


@mcp.custom_route("/answers", methods=["GET"])
async def list_answers(request: Request) -> JSONResponse:
    """What each pushed form got back: accept, decline, cancel, or error."""
    return JSONResponse(answers)


@mcp.custom_route("/reset", methods=["POST"])
async def reset(request: Request) -> PlainTextResponse:
    """Forget bookings, answers and sign-ins (each test starts clean)."""
    bookings.clear()
    answers.clear()
    logged_in.clear()
    return PlainTextResponse("reset")


@mcp.custom_route("/session", methods=["GET"])
async def session(request: Request) -> JSONResponse:
    """Whether a user has signed in (what a before-call hook asks before letting a call through)."""
    return JSONResponse({"signed_in": request.query_params.get("user", "") in logged_in})


@mcp.custom_route("/login", methods=["GET"])
async def login(request: Request) -> PlainTextResponse:
    """The page a URL elicitation sends the person to; visiting it signs them in."""
    logged_in.add(request.query_params.get("user", ""))
    return PlainTextResponse("signed in")


base_url = ""

if __name__ == "__main__" and sys.argv[1] == "stdio":
    # Over stdio, as a child of sayso's; it writes its pid to the file named, so a test can stop it mid-call.
    Path(sys.argv[2]).write_text(str(os.getpid()))
    mcp.run(transport="stdio", show_banner=False)
elif __name__ == "__main__":
    port = int(sys.argv[1])
    base_url = f"http://127.0.0.1:{port}"
    uvicorn.run(mcp.http_app(path="/mcp"), host="127.0.0.1", port=port, log_level="warning")
