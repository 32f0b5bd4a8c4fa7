"""Runtime events: `request.opened`, `request.decided` and `request.expired`, announced to listeners.

Events come from the runtime itself, so a request decided over REST, A2A, AG-UI or the CLI is
announced the same way. A listener that raises is logged and never breaks the run that caused
the event; with no listener, no payload is built.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias, final

from typing_extensions import TypedDict

from .._core.decisions import DECISION_ADAPTER, DecidedBy, DecisionRecord, Expired, Via
from .._core.requests import DelegateRequest, Request
from .._core.votes import Vote
from ._results import VoteJson, request_json, vote_json

logger = logging.getLogger("sayso.events")

RequestEvent = Literal["request.opened", "request.decided", "request.expired"]


class _AboutRequest(TypedDict):
    request: dict[str, Any]
    """`request_json` of the request."""


@final
class OpenedData(_AboutRequest):
    """What `request.opened` and `request.expired` say: the request as every interface shows it."""


@final
class DecidedData(_AboutRequest):
    """What `request.decided` says: the request, the decision as JSON, who took it and through what."""

    decision: dict[str, Any]
    by: DecidedBy
    principal: str | None
    via: Via | None


@final
class VotedData(_AboutRequest):
    """What `request.voted` (webhooks only) says: the request as it stood after the vote (its `quorum`), the vote."""

    vote: VoteJson


EventData: TypeAlias = OpenedData | DecidedData | VotedData
"""What an event says; listeners and webhooks (from the outbox) read the same data."""

EventListener = Callable[[RequestEvent, EventData], None]
"""Called with an event name and its data; see `Sayso.add_listener`."""


def opened_data(request: Request, votes: Sequence[Vote] | None = None) -> OpenedData:
    """What `request.opened` says: the request as every interface shows it (with its quorum when `votes` are given)."""
    return OpenedData(request=request_json(request, votes=votes))


def voted_data(request: Request, votes: Sequence[Vote], seq: int) -> VotedData:
    """What `request.voted` says about the request's `seq`-th vote: where its quorum stood once it was cast."""
    return VotedData(request=request_json(request, votes=votes[: seq + 1]), vote=vote_json(votes[seq]))


def decided_event(request: Request, record: DecisionRecord) -> tuple[RequestEvent, EventData]:
    """The event a decision makes (`request.expired` for an expiry) and what it says.

    Listeners and webhooks (from the outbox) read the same data.
    """
    if isinstance(record.decision, Expired):
        return "request.expired", OpenedData(request=request_json(request))
    decision = DECISION_ADAPTER.dump_python(record.decision, mode="json")
    return "request.decided", DecidedData(
        request=request_json(request), decision=decision, by=record.by, principal=record.principal, via=record.via
    )


class Events:
    """The listeners of one runtime and the events it announces."""

    def __init__(self) -> None:
        self.listeners: list[EventListener] = []
        self.watchers: set[Callable[[], None]] = set()
        """Watches (`Sayso.watch`) to wake when this process changed something, so they look at once."""

    def touched(self) -> None:
        """Wake the watches: this process just wrote a change (a pause, a decision, a run's end)."""
        for wake in list(self.watchers):
            wake()

    def opened(self, requests: Sequence[Request]) -> None:
        """Announce requests a pause opened (a delegate's own call is not a request for a person)."""
        self.touched()
        if not self.listeners:
            return
        for request in requests:
            if not isinstance(request, DelegateRequest):
                self._call("request.opened", opened_data(request))

    def decided(self, requests: Sequence[Request], records: Sequence[DecisionRecord]) -> None:
        """Announce decisions (an expiry is announced as `request.expired`)."""
        if records:
            self.touched()
        if not self.listeners or not records:
            return
        by_id = {r.request_id: r for r in requests}
        for record in records:
            request = by_id.get(record.request_id)
            if request is None or isinstance(request, DelegateRequest):
                continue
            self._call(*decided_event(request, record))

    def _call(self, event: RequestEvent, data: EventData) -> None:
        for listener in self.listeners:
            try:
                listener(event, data)
            except Exception:
                # A listener is the embedder's code: its failure is theirs to see in the log,
                # never a reason for a run or a decision to fail.
                logger.exception("listener %r raised on %s; the run goes on", listener, event)
