"""Slack through `slack-sdk`: a request posted with Approve / Reject / Edit buttons, updated once it is decided.

The message goes out with `chat.postMessage` (the bot's token, `AsyncWebClient(base_url=...)`);
where it landed (channel and `ts`) is kept beside sayso's state, so a retried notice never posts
twice and the request's decision — taken in Slack or anywhere else — updates it (`chat.update`)
with the outcome and by whom. The clicks come back to `_interactions`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

from pydantic import JsonValue
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from .._config.channels import SlackChannelConfig
from .._core.access import LOCAL_NAME
from .._core.channels import Target
from .._core.decisions import VIA_LABELS
from .._core.links import args_digest
from .._core.votes import standing_args
from .._runtime import OutboundEvent, Sayso, request_json
from ._dispatch import NoticeFailed, Outcome
from ._links import args_shown

MESSAGES = "channels.slack.messages"
"""The marks' namespace of posted messages: `{request_id} {target}` → `{"channel": ..., "ts": ...}`."""

Block: TypeAlias = dict[str, JsonValue]
"""A Block Kit block or view, as Slack documents it."""

ACTIONS = ("sayso.approve", "sayso.reject", "sayso.edit")
BLOCK_TEXT_CHARS = 3000
"""The longest text a block holds: Slack refuses a message with a longer one (`invalid_blocks`), never to post it."""
INPUT_CHARS = 3000
"""The longest initial value of a form's text input: Slack refuses to open a form with a longer one (`views.open`)."""
MESSAGE_TEXT_CHARS = 40_000
"""The longest `text` of a message: Slack refuses a longer one (`msg_too_long`)."""
_CUT = "\n… (cut: the rest is in sayso)"
_TRANSIENT = frozenset({"ratelimited", "internal_error", "service_unavailable", "request_timeout", "fatal_error"})


class SlackChannel:
    """Posts requests to `slack:` targets and updates the message when the request is decided or expires."""

    def __init__(self, sayso: Sayso, config: SlackChannelConfig) -> None:
        self.sayso = sayso
        self.config = config
        self.max_attempts = config.max_attempts
        self.backoff_seconds = config.backoff_seconds
        self.timeout_seconds = config.timeout_seconds
        self.client = AsyncWebClient(token=config.bot_token(), base_url=config.base_url, timeout=30)
        config.signing_secret()  # checked at start-up, as the interactions need it

    def principal_for(self, user: str) -> str | None:
        """Whom a Slack user's clicks decide as: the principal `users` maps them to; `None`: nobody.

        Without principals (local development) a mapped user decides as `local`, the one caller there
        (a mapped name would be a principal the config does not have, let decide nothing); an unmapped
        user still decides nothing, as the map is who may click at all.
        """
        mapped = self.config.users.get(user)
        return LOCAL_NAME if mapped is not None and not self.sayso.config.principals else mapped

    def delivery(self, target: Target) -> SlackChannel:
        """Every address is tried as the channel's config says."""
        return self

    async def deliver(self, target: Target, event: OutboundEvent) -> Outcome:
        request = event.data["request"]
        key = f"{request['id']} {target.text}"
        posted = await self.sayso.get_mark(MESSAGES, key)
        if event.event == "request.escalated" and posted is not None:
            if not event.still_open:
                return "skipped"
            where = json.loads(posted)  # a reminder, in the thread of the message the target already has
            await self._call(
                "chat.postMessage",
                channel=where["channel"],
                thread_ts=where["ts"],
                text=f"Still waiting: {event.reason}",
            )
            return "delivered"
        if event.event in ("request.opened", "request.escalated"):
            if posted is not None or not event.still_open:
                return "skipped"  # posted by an attempt that died before settling, or decided already
            # What the message shows, and the digest its Approve button approves, read together: an edit vote
            # since the event was built changed the arguments, and a click approves what its person saw.
            state = await self.sayso.request(request["id"])
            shown = request_json(state.request, votes=state.votes)
            digest = args_digest(standing_args(state.request, state.votes))
            answer = await self._call(
                "chat.postMessage",
                channel=target.address,
                text=summary(shown),
                blocks=request_blocks(shown, event.reason, digest=digest),
            )
            await self.sayso.set_mark(MESSAGES, key, json.dumps({"channel": answer["channel"], "ts": answer["ts"]}))
            return "delivered"
        if posted is None:
            return "skipped"  # never posted here: nothing to update
        where = json.loads(posted)
        text = outcome_text(event.event, event.data)
        await self._call(
            "chat.update",
            channel=where["channel"],
            ts=where["ts"],
            text=fitted(text, MESSAGE_TEXT_CHARS),
            blocks=outcome_blocks(request, text),
        )
        return "delivered"

    async def tell(self, channel: str, user: str, text: str) -> None:
        """A message only `user` sees (a refused click, say); best effort."""
        try:
            await self.client.chat_postEphemeral(channel=channel, user=user, text=text)
        except (SlackApiError, SlackClientError, OSError):
            pass

    async def open_view(self, trigger_id: str, view: Mapping[str, JsonValue]) -> None:
        """Open a modal (a reason to reject with, arguments to edit) for the click that sent `trigger_id`."""
        await self._call("views.open", trigger_id=trigger_id, view=view)

    async def _call(self, method: str, **params: Any) -> Mapping[str, Any]:
        try:
            answer = await self.client.api_call(method, json=params)
        except SlackApiError as exc:
            error = str(exc.response.get("error", "")) if exc.response is not None else ""
            raise NoticeFailed(f"Slack refused {method}: {error or exc}", retry=error in _TRANSIENT) from exc
        except (SlackClientError, OSError) as exc:
            raise NoticeFailed(f"Slack's API did not answer {method}: {exc}") from exc
        return dict(answer.data) if isinstance(answer.data, dict) else {}


def summary(request: Mapping[str, Any]) -> str:
    return f"{request['agent_path']} wants to call {request['tool_name']}"


def request_blocks(request: Mapping[str, Any], reason: str | None = None, *, digest: str | None = None) -> list[Block]:
    """The message of an open request: what is asked, the arguments, the buttons (and an escalation's step).

    Approve carries `digest`, of the arguments shown (`args_digest`): its click approves those.
    """
    hint = request.get("hint") or ""
    if reason:
        hint = f"{hint}\n_Still waiting: {reason}_".strip()
    args = json.dumps(args_shown(request), indent=2, ensure_ascii=False, sort_keys=True)
    button = [
        ("sayso.approve", "Approve", "primary", f"{request['id']} {digest}" if digest else request["id"]),
        ("sayso.reject", "Reject", "danger", request["id"]),
        ("sayso.edit", "Edit", None, request["id"]),
    ]
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": fitted(f"*{summary(request)}*\n{hint}".strip())}},
        {"type": "section", "text": {"type": "mrkdwn", "text": f"```{fitted(args, BLOCK_TEXT_CHARS - 6)}```"}},
        {
            "type": "actions",
            "block_id": "sayso",
            "elements": [
                {
                    "type": "button",
                    "action_id": action,
                    "text": {"type": "plain_text", "text": label},
                    "value": value,
                    **({"style": style} if style else {}),
                }
                for action, label, style, value in button
            ],
        },
    ]


def outcome_text(event: str, data: Any) -> str:
    """What became of the request, and by whom: `Approved by bob (Slack)`."""
    if event == "request.expired":
        return "Expired: nobody decided in time."
    decision = data.get("decision", {})
    kind = decision.get("kind", "decided")
    verb = {"approve": "Approved", "reject": "Rejected", "skip": "Skipped"}.get(kind, kind.capitalize())
    if kind == "approve" and decision.get("edited_args") is not None:
        verb = "Approved with edited arguments"
    who = data.get("principal") or data.get("by") or "someone"
    via = VIA_LABELS.get(data.get("via") or "", "")
    reason = f": {decision['reason']}" if kind == "reject" and decision.get("reason") else ""
    return f"{verb} by {who}{f' ({via})' if via else ''}{reason}"


def outcome_blocks(request: Mapping[str, Any], text: str) -> list[Block]:
    """The message once decided: what was asked, and the outcome in place of the buttons."""
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{summary(request)}*"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": fitted(text)}]},
    ]


def fitted(text: str, room: int = BLOCK_TEXT_CHARS) -> str:
    """`text` as a block holds it: cut, saying so, when longer (the decision is on the whole call all the same)."""
    return text if len(text) <= room else text[: room - len(_CUT)] + _CUT


def reason_view(request_id: str) -> Block:
    """The modal a Reject click opens: a reason the agent reads."""
    return {
        "type": "modal",
        "callback_id": "sayso.reject",
        "private_metadata": request_id,
        "title": {"type": "plain_text", "text": "Reject"},
        "submit": {"type": "plain_text", "text": "Reject"},
        "blocks": [
            {
                "type": "input",
                "block_id": "reason",
                "optional": True,
                "label": {"type": "plain_text", "text": "Reason (the agent reads it)"},
                "element": {"type": "plain_text_input", "action_id": "reason", "multiline": True},
            }
        ],
    }


class NotEditable(Exception):
    """The arguments cannot be edited in a Slack form; the message says where they can be."""


def edit_view(request: Mapping[str, Any], *, web_ui: str | None = None) -> Block:
    """The modal an Edit click opens: the arguments as they stand, as JSON, to approve with once changed.

    Raises:
        NotEditable: they are longer than a form's input starts with (Slack would refuse to open it, and a
            cut copy approved would change the call); `web_ui`, the server's public address, is named instead.
    """
    args = json.dumps(args_shown(request), indent=2, ensure_ascii=False, sort_keys=True)
    if len(args) > INPUT_CHARS:
        where = f"in the web UI ({web_ui.rstrip('/')}/)" if web_ui else "in the web UI"
        raise NotEditable(
            f"These arguments are too long to edit in Slack ({len(args):,} characters; its form takes "
            f"{INPUT_CHARS:,}): edit them {where} or with "
            f"`sayso decide CONFIG {request['id']} approve --args '<the arguments as JSON>'`."
        )
    return {
        "type": "modal",
        "callback_id": "sayso.edit",
        "private_metadata": request["id"],
        "title": {"type": "plain_text", "text": "Edit and approve"},
        "submit": {"type": "plain_text", "text": "Approve"},
        "blocks": [
            {
                "type": "input",
                "block_id": "args",
                "label": {"type": "plain_text", "text": f"Arguments of {request['tool_name']} (JSON)"},
                "element": {"type": "plain_text_input", "action_id": "args", "multiline": True, "initial_value": args},
            }
        ],
    }
