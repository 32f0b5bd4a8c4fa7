"""`POST /v1/slack/interactions`: Slack's button clicks and modal submissions, verified, mapped and decided.

Every payload is checked with the app's signing secret by slack-sdk's `SignatureVerifier` (which
also refuses a timestamp more than five minutes off), and refused when seen before: its
`trigger_id` (new for every click and submission) is kept once, across replicas. The Slack user
is mapped to a principal (`channels.slack.users`); an unmapped user decides nothing. The decision
goes through the runtime's decide verb (`via="slack"`, the one access rule), in the background so
Slack gets its answer within its three seconds; a refusal, a vote short of its quorum and a vote
not counted are told to the user alone (`_outcome`), and the message is updated with a decision's
outcome by the notice the decision itself sends (see `_slack`).
A payload whose shape is not one Slack documents (a button's click without its action, a user that
is no object) is refused with a 400 naming the field before anything is recorded: it takes no
`trigger_id`, so nothing a malformed payload does can make Slack's real one a replay.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from anyio.abc import TaskGroup
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from slack_sdk.signature import SignatureVerifier

from .._core.deciding import needs_votes
from .._core.decisions import Approve, Decision, Reject
from .._core.links import args_with_digest
from .._runtime import Sayso, request_json
from ..exceptions import SaysoError
from ._dispatch import NoticeFailed
from ._links import form_fields
from ._outcome import told
from ._slack import ACTIONS, NotEditable, SlackChannel, edit_view, reason_view

logger = logging.getLogger("sayso.channels.slack")

INTERACTIONS_PATH = "/v1/slack/interactions"
SEEN = "channels.slack.seen"
"""The marks' namespace of interaction payloads already taken: refused when they come again."""


class _Slack(BaseModel):
    """A part of an interaction payload as Slack documents it: the fields sayso reads, of the types Slack sends.

    Other fields are ignored (Slack adds some), so only a payload sayso could misread is refused.
    """

    model_config = ConfigDict(strict=True, frozen=True)


class _Id(_Slack):
    id: str


class _Action(_Slack):
    action_id: str
    value: str = ""


class _Input(_Slack):
    value: str | None = None
    """A plain text input's text; Slack sends `null` for an optional one left empty."""


class _ViewState(_Slack):
    values: dict[str, dict[str, _Input]] = Field(default_factory=dict)
    """`block_id` → `action_id` → what was entered."""

    def text(self, block: str) -> str:
        """What the modal's input `block` (whose action id is the same) holds: sayso's modals name both alike."""
        entered = self.values.get(block, {}).get(block)
        return (entered.value if entered is not None else None) or ""


class _View(_Slack):
    callback_id: str = ""
    private_metadata: str = ""
    state: _ViewState = Field(default_factory=_ViewState)


class _Payload(_Slack):
    """Any interaction: whose it is and where it happened; types sayso does not handle are answered and ignored."""

    type: str
    trigger_id: str | None = None
    user: _Id
    channel: _Id | None = None


class _Clicked(_Payload):
    """`block_actions`: a button of a message pressed (Slack sends the one action)."""

    type: Literal["block_actions"]
    actions: list[_Action] = Field(min_length=1)


class _Submitted(_Payload):
    """`view_submission`: a modal submitted."""

    type: Literal["view_submission"]
    view: _View


def _parsed(raw: object) -> _Payload:
    """The payload as its type's model (the type picks the model, so a malformed click is never "some other type").

    Raises:
        ValidationError: a field sayso reads is missing or of another type than Slack sends.
    """
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind == "block_actions":
        return _Clicked.model_validate(raw)
    if kind == "view_submission":
        return _Submitted.model_validate(raw)
    return _Payload.model_validate(raw)


def _problem(exc: ValidationError) -> str:
    """The first thing wrong with a payload, named by its field: `actions.0.action_id: field required`."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"]) or "payload"
    said = "should be an object" if error["type"] in ("model_type", "model_attributes_type") else error["msg"]
    return f"the interaction payload is not as Slack sends it: {where}: {said}"


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
        try:
            parsed = _parsed(payload)
        except ValidationError as exc:
            return _refused(400, _problem(exc))  # before the trigger is taken: Slack's own payload is no replay
        seen = parsed.trigger_id or hashlib.sha256(body).hexdigest()
        if not await self.sayso.claim_mark(SEEN, seen, parsed.type):
            return _refused(409, "this interaction was already received")
        user = parsed.user.id
        principal = self.slack.principal_for(user)
        channel = parsed.channel.id if parsed.channel is not None else ""
        if principal is None:
            if channel:
                await self.slack.tell(channel, user, "sayso does not know you: ask an admin to map your Slack user.")
            return _refused(403, f"the Slack user {user!r} is no principal (channels.slack.users)")
        if isinstance(parsed, _Clicked):
            return await self._clicked(parsed, principal, user, channel)
        if isinstance(parsed, _Submitted):
            return self._submitted(parsed, principal, user)
        return Response(status_code=200)

    async def _clicked(self, payload: _Clicked, principal: str, user: str, channel: str) -> Response:
        actions = [a for a in payload.actions if a.action_id in ACTIONS]
        if not actions:
            return Response(status_code=200)
        action, request_id = actions[0].action_id, actions[0].value
        trigger = payload.trigger_id or ""
        if action == "sayso.approve":
            request_id, _, digest = request_id.partition(" ")
            self._start(self._approving, request_id, digest, principal, user, channel)
            return Response(status_code=200)
        try:
            if action == "sayso.reject":
                view = reason_view(request_id)
            else:
                state = await self.sayso.request(request_id, principal=principal)
                view = edit_view(
                    request_json(state.request, votes=state.votes), web_ui=self.sayso.config.channels.public_url
                )
            await self.slack.open_view(trigger, {**view, "private_metadata": f"{request_id} {channel}"})
        except NotEditable as exc:
            await self.slack.tell(channel, user, str(exc))
        except (SaysoError, NoticeFailed) as exc:
            await self.slack.tell(channel, user, f"Could not open the form: {exc}")
        return Response(status_code=200)

    def _submitted(self, payload: _Submitted, principal: str, user: str) -> Response:
        view = payload.view
        request_id, _, channel = view.private_metadata.partition(" ")
        if view.callback_id == "sayso.reject":
            reason = view.state.text("reason").strip()
            self._decide(request_id, Reject(reason=reason or None), principal, user, channel)
            return Response(status_code=200)
        if view.callback_id != "sayso.edit":
            return Response(status_code=200)
        text = view.state.text("args")
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
        """Decide, telling the user alone what the message's update will not show: a vote short, or not counted."""
        try:
            done = await self.sayso.decide(request_id, decision, principal=principal, via="slack")
            said = await told(self.sayso, decision, done)
        except SaysoError as exc:
            logger.info("a decision from Slack was refused: %s", exc)
            if channel:
                await self.slack.tell(channel, user, f"Not recorded: {exc}")
            return
        if channel and not said.decided:
            await self.slack.tell(channel, user, said.text)


def interactions_router(interactions: Interactions) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.post(INTERACTIONS_PATH)
    async def interact(request: Request) -> Response:
        return await interactions.handle(await request.body(), dict(request.headers))

    return router


def _refused(status: int, detail: str) -> Response:
    return JSONResponse({"ok": False, "error": detail}, status_code=status)
