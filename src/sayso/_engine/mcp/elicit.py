"""The one module that maps between MCP elicitation and sayso's `elicitation` requests and decisions.

See docs/guides/mcp.md#when-a-server-asks-the-person.

Pure functions over plain data, in both directions:

- what a server asks (`ElicitRequestFormParams` / `ElicitRequestURLParams`, or the
  URL-elicitation-required error -32042 that pydantic-ai surfaces as a `ModelRetry` caused by an
  `MCPError`) becomes an `Elicitation` (`_calls`): the MCP half of an `ElicitationRequest`, carried
  in a `Deferral` until the runtime gives it a run, a thread and an id;
- a person's decision on such a request (`Accept`, `Decline`, `Cancel`; a skip or an expiry
  counts as cancel) becomes the `ElicitResult` handed back to the server;
- a stored request is matched against the elicitation a re-issued call brings (same mode,
  message, schema and URL), so a stored answer is only ever handed to the question it answers.

Checking the person's content against the requested schema happens earlier, in
`_core.decisions.check_decision`, so a wrong answer is refused with the pause still open
(fastmcp would otherwise fail the whole tool call on content that breaks the schema).
"""

from __future__ import annotations

import mcp_types
from mcp import MCPError

from ..._core.audit import canonical_json
from ..._core.decisions import Accept, Decision
from ..._core.requests import ElicitationDelivery, ElicitationRequest
from ..calls import Elicitation

__all__ = ["Elicitation", "from_params", "matches", "to_elicit_result", "url_required"]


def from_params(
    params: mcp_types.ElicitRequestFormParams | mcp_types.ElicitRequestURLParams,
    *,
    server: str,
    delivery: ElicitationDelivery = "live",
) -> Elicitation:
    """What the server asks in an `elicitation/create` request (or an input request embedded in a result or task)."""
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return Elicitation(
            server=server,
            mode="url",
            message=params.message,
            url=params.url,
            elicitation_id=params.elicitation_id,
            delivery=delivery,
        )
    return Elicitation(
        server=server,
        mode="form",
        message=params.message,
        requested_schema=params.requested_schema,
        delivery=delivery,
    )


def url_required(error: BaseException, *, server: str) -> list[Elicitation] | None:
    """The URLs a URL-elicitation-required error (-32042) sends the person to, or `None` for any other error.

    pydantic-ai raises a `ModelRetry` whose cause is the `MCPError`, so the cause chain is searched.
    """
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, MCPError) and seen.error.code == mcp_types.URL_ELICITATION_REQUIRED:
            data = mcp_types.ElicitationRequiredErrorData.model_validate(seen.error.data or {"elicitations": []})
            return [from_params(e, server=server, delivery="retry") for e in data.elicitations]
        seen = seen.__cause__
    return None


def to_elicit_result(request: ElicitationRequest | Elicitation, decision: Decision) -> mcp_types.ElicitResult:
    """The answer the server receives for a decided request.

    Accept carries the form's content (URL mode: none, the page was visited); decline stays
    decline; cancel, and a request closed without an answer (skipped, expired), is cancel.
    """
    if isinstance(decision, Accept):
        content = (decision.content or {}) if request.mode == "form" else None
        return mcp_types.ElicitResult(action="accept", content=content)
    if decision.kind == "decline":
        return mcp_types.ElicitResult(action="decline")
    return mcp_types.ElicitResult(action="cancel")


def matches(request: ElicitationRequest, asked: Elicitation) -> bool:
    """Whether a re-issued call's elicitation is the one `request` answered (same server, mode, message, schema, URL).

    Only then may a stored answer be handed over; anything else is a new question for the person.
    """
    return (
        request.server == asked.server
        and request.mode == asked.mode
        and request.message == asked.message
        and canonical_json(request.requested_schema) == canonical_json(asked.requested_schema)
        and request.url == asked.url
    )
