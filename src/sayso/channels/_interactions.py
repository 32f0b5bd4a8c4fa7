"""`POST /v1/slack/interactions`: Slack's button clicks and modal submissions, verified, mapped and decided.

Every payload is checked with the app's signing secret by slack-sdk's `SignatureVerifier` (which
also refuses a timestamp more than five minutes off), and refused when seen before: its
`trigger_id` (new for every click and submission) is kept once, across replicas. The Slack user
is mapped to a principal (`channels.slack.users`); an unmapped user decides nothing. The decision
goes through the runtime's decide verb (`via="slack"`, the one access rule), in the background so
Slack gets its answer within its three seconds; a refusal is told to the user alone, and the
message is updated with the outcome by the notice the decision itself sends (see `_slack`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from anyio.abc import TaskGroup
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from slack_sdk.signature import SignatureVerifier

from .._core.deciding import needs_votes
from .._core.decisions import Approve, Decision, Reject
from .._core.links import args_with_digest
from .._runtime import Sayso, request_json
from ..exceptions import SaysoError
from ._dispatch import NoticeFailed
from ._links import form_fields
from ._slack import ACTIONS, SlackChannel, edit_view, reason_view

logger = logging.getLogger("sayso.channels.slack")

INTERACTIONS_PATH = "/v1/slack/interactions"
SEEN = "channels.slack.seen"
"""The marks' namespace of interaction payloads already taken: refused when they come again."""


class Interactions:
    """What the interactions endpoint needs: the runtime, the Slack channel, and a task group to decide in."""

    def __init__(self, sayso: Sayso, slack: SlackChannel) -> None:
        self.sayso = sayso
        self.slack = slack
        self.verifier = SignatureVerifier(slack.config.signing_secret())
        self.tasks: TaskGroup | None = None

    async def handle(self, body: bytes, headers: dict[str, str]) -> Response:
        if not self.verifier.is_valid_request(body, headers):
            return _refused(401, "the request is not signed with this app's signing secret, or is too old")
        try:
            payload = json.loads(form_fields(body).get("payload", ""))
        except ValueError:
            return _refused(400, "no interaction payload")
        if not isinstance(payload, dict):
            return _refused(400, "no interaction payload")
        seen = str(payload.get("trigger_id") or hashlib.sha256(body).hexdigest())
        if not await self.sayso.claim_mark(SEEN, seen, str(payload.get("type", ""))):
            return _refused(409, "this interaction was already received")
        user = str((payload.get("user") or {}).get("id", ""))
        principal = self.slack.config.users.get(user)
        channel = str((payload.get("channel") or {}).get("id", ""))
        if principal is None:
            if channel:
                await self.slack.tell(channel, user, "sayso does not know you: ask an admin to map your Slack user.")
            return _refused(403, f"the Slack user {user!r} is no principal (channels.slack.users)")
        kind = payload.get("type")
        if kind == "block_actions":
            return await self._clicked(payload, principal, user, channel)
        if kind == "view_submission":
            return self._submitted(payload, principal, user)
        return Response(status_code=200)

    async def _clicked(self, payload: Mapping[str, Any], principal: str, user: str, channel: str) -> Response:
        actions = [a for a in payload.get("actions") or [] if a.get("action_id") in ACTIONS]
        if not actions:
            return Response(status_code=200)
        action, request_id = actions[0]["action_id"], str(actions[0].get("value", ""))
        trigger = str(payload.get("trigger_id", ""))
        if action == "sayso.approve":
            request_id, _, digest = request_id.partition(" ")
            self._start(self._approving, request_id, digest, principal, user, channel)
            return Response(status_code=200)
        try:
            if action == "sayso.reject":
                view = reason_view(request_id)
            else:
                state = await self.sayso.request(request_id, principal=principal)
                view = edit_view(request_json(state.request, votes=state.votes))
            await self.slack.open_view(trigger, {**view, "private_metadata": f"{request_id} {channel}"})
        except (SaysoError, NoticeFailed) as exc:
            await self.slack.tell(channel, user, f"Could not open the form: {exc}")
        return Response(status_code=200)

    def _submitted(self, payload: Mapping[str, Any], principal: str, user: str) -> Response:
        view = payload.get("view") or {}
        request_id, _, channel = str(view.get("private_metadata", "")).partition(" ")
        values = (view.get("state") or {}).get("values") or {}
        if view.get("callback_id") == "sayso.reject":
            reason = str(((values.get("reason") or {}).get("reason") or {}).get("value") or "").strip()
            self._decide(request_id, Reject(reason=reason or None), principal, user, channel)
            return Response(status_code=200)
        if view.get("callback_id") != "sayso.edit":
            return Response(status_code=200)
        text = str(((values.get("args") or {}).get("args") or {}).get("value") or "")
        try:
            edited = json.loads(text)
        except ValueError as exc:
            return JSONResponse({"response_action": "errors", "errors": {"args": f"not JSON: {exc}"}})
        if not isinstance(edited, dict):
            return JSONResponse({"response_action": "errors", "errors": {"args": "must be a JSON object"}})
        self._decide(request_id, Approve(edited_args=edited), principal, user, channel)
        return Response(status_code=200)

    def _decide(self, request_id: str, decision: Decision, principal: str, user: str, channel: str) -> None:
        self._start(self._deciding, request_id, decision, principal, user, channel)

    def _start(self, task: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        assert self.tasks is not None, "the channels' lifespan runs"
        self.tasks.start_soon(task, *args)

    async def _approving(self, request_id: str, digest: str, principal: str, user: str, channel: str) -> None:
        """Approve the arguments the message showed: an edit vote made since never gets an approval unseen.

        `digest` is theirs; none: a message posted before buttons carried it, which showed the proposed ones.
        """
        try:
            state = await self.sayso.request(request_id)  # only to pick the arguments: the decision checks who
        except SaysoError as exc:
            logger.info("a decision from Slack was refused: %s", exc)
            if channel:
                await self.slack.tell(channel, user, f"Not recorded: {exc}")
            return
        shown = args_with_digest(state.request, state.votes, digest) if digest else state.request.args
        if shown is None:
            if channel:
                await self.slack.tell(channel, user, "Not recorded: this message is not about that request's calls.")
            return
        decision = Approve(edited_args=dict(shown)) if needs_votes(state.request) else Approve()
        await self._deciding(request_id, decision, principal, user, channel)

    async def _deciding(self, request_id: str, decision: Decision, principal: str, user: str, channel: str) -> None:
        try:
            await self.sayso.decide(request_id, decision, principal=principal, via="slack")
        except SaysoError as exc:
            logger.info("a decision from Slack was refused: %s", exc)
            if channel:
                await self.slack.tell(channel, user, f"Not recorded: {exc}")


def interactions_router(interactions: Interactions) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.post(INTERACTIONS_PATH)
    async def interact(request: Request) -> Response:
        return await interactions.handle(await request.body(), dict(request.headers))

    return router


def _refused(status: int, detail: str) -> Response:
    return JSONResponse({"ok": False, "error": detail}, status_code=status)
