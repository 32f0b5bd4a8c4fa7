"""Approvals a tool's service enforces itself: reading its reply, and what it is told afterwards.

See docs/concepts/pauses.md#tools-whose-service-asks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from .decisions import Approve, Decision, Expired, Reject, Skip
from .requests import ApprovalRequest, Scope, Subject

REPLY_KEYS = ("sayso_approval", "kaboo_approval")
STILL_NEEDS_APPROVAL = "Still needs approval: the service asked again after the approval, so the call was not repeated."


@dataclass(frozen=True, kw_only=True)
class ServiceAsk:
    """A service's request for approval, read from a tool's normal reply."""

    request: str
    subject: Subject | None = None
    scopes: tuple[Scope, ...] = ("once",)
    message: str | None = None
    expires_at: float | None = None


def parse_service_ask(value: Any) -> ServiceAsk | None:
    """The approval a tool's reply asks for, in any accepted shape, or `None` for an ordinary reply.

    Accepted: `{"sayso_approval": {...}}` or `{"kaboo_approval": {...}}` as an object or as JSON
    text, also wrapped as the MCP SDK wraps strings: `{"result": "<json>"}`. The deadline is
    `expires_at` (seconds since the epoch), or kaboo's `expiresAt` (that, or an ISO 8601 time); a
    deadline that cannot be read makes the reply no request at all, so it never waits longer than meant.
    """
    value = _loads(value)
    if isinstance(value, dict) and set(value) == {"result"}:
        value = _loads(value["result"])
    if not isinstance(value, dict):
        return None
    body = next((value[k] for k in REPLY_KEYS if isinstance(value.get(k), dict)), None)
    if body is None or not isinstance(body.get("request"), str) or not body["request"]:
        return None
    raw_deadline = body.get("expires_at", body.get("expiresAt"))
    expires_at = _deadline(raw_deadline)
    if raw_deadline is not None and expires_at is None:
        return None
    subject = body.get("subject")
    scopes = [s for s in body.get("scopes") or () if s in ("thread", "always")]
    return ServiceAsk(
        request=body["request"],
        subject=Subject(key=str(subject["key"]), label=str(subject.get("label") or subject["key"]))
        if isinstance(subject, dict) and "key" in subject
        else None,
        scopes=("once", *dict.fromkeys(scopes)),  # once is always offered, even if the service lists only wider ones
        message=body.get("message") if isinstance(body.get("message"), str) else None,
        expires_at=expires_at,
    )


def _deadline(value: Any) -> float | None:
    """A deadline in seconds since the epoch, from a number or an ISO 8601 time; `None` when unreadable."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return None


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


class ServiceNotice(TypedDict):
    """What a service is told about a decision on its own request: which request, how, by whom and when.

    The `on_decision` hook's argument, and the decision webhook's `data`.
    """

    request: str
    """The service's own request id."""
    tool_name: str
    thread_id: str
    principal: str | None
    decided_at: float

    decision: Literal["approved", "rejected", "skipped", "expired"]
    scope: NotRequired[Scope]
    """An approval's scope."""
    edited_args: NotRequired[dict[str, Any]]
    """An approval's edited arguments, when the person edited them."""
    reason: NotRequired[str | None]
    """A rejection's or skip's reason (`None` when none was given)."""


def service_notice(request: ApprovalRequest, decision: Decision, *, principal: str | None, at: float) -> ServiceNotice:
    """What the service is told about a decision on its request, before the run continues."""
    assert request.service_request is not None
    notice = ServiceNotice(
        request=request.service_request,
        tool_name=request.tool_name,
        thread_id=request.thread_id,
        principal=principal,
        decided_at=at,
        decision="expired",
    )
    match decision:
        case Approve(scope=scope, edited_args=edited):
            notice["decision"], notice["scope"] = "approved", scope
            if edited is not None:
                notice["edited_args"] = edited
        case Reject(reason=reason):
            notice["decision"], notice["reason"] = "rejected", reason
        case Skip(reason=reason):
            notice["decision"], notice["reason"] = "skipped", reason
        case Expired():
            pass
        case _:
            raise AssertionError(f"an approval request cannot be decided with {decision.kind!r}")
    return notice
