"""A segment's model replies as steps: kept before a tool's step depends on them, handed back when it is redone.

A tool's steps (`sayso.step`) are told apart by the id of their call, which only the model's
reply holds, and the store keeps a segment's replies only when the run pauses or ends. A segment
redone after a crash (its process died) asks the model again, and a model answers with new call
ids. So before a tool's first step runs, the segment's replies so far go into the step journal
(`Replies.keep`), and a redone segment's model (`ReplayedModel`) hands each kept reply back
instead of asking again: the same calls, with the same ids, find the steps they took. Replies no
step depends on are not kept (no write), and a redone segment keeps each reply it asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from .._core.steps import StepJournal, StepKey

REPLIES_SCOPE = "model"
"""The journal scope of a run's model replies (their occurrence: how many replies its thread's history holds)."""


@dataclass(kw_only=True)
class Replies:
    """The model's replies in one segment of a run, kept in the journal once a tool's step depends on them."""

    run_id: str
    journal: StepJournal
    history: Sequence[ModelMessage]
    """The history the segment was given: where it begins in the run's messages."""
    kept: int = 0
    """How many of the segment's replies are in the journal."""
    start: int = field(init=False)
    """Where the segment begins in the run's messages (taken when it begins)."""
    _before: int | None = None

    def __post_init__(self) -> None:
        self.start = len(self.history)

    @property
    def before(self) -> int:
        """How many replies the history holds, counted the first time a reply is kept (most segments never are)."""
        if self._before is None:
            self._before = sum(isinstance(m, ModelResponse) for m in self.history[: self.start])
        return self._before

    def key(self, reply: int) -> StepKey:
        """The journal key of the segment's `reply`-th reply (from 0)."""
        return StepKey(run_id=self.run_id, scope=REPLIES_SCOPE, name="reply", occurrence=self.before + reply + 1)

    async def keep(self, messages: Sequence[ModelMessage]) -> None:
        """Put the segment's replies so far into the journal (those not kept yet)."""
        replies = [m for m in messages[self.start :] if isinstance(m, ModelResponse)]
        for index in range(self.kept, len(replies)):
            data = ModelMessagesTypeAdapter.dump_json([replies[index]])

            async def kept(data: bytes = data) -> bytes:
                return data

            await self.journal.run(self.key(index), kept, idempotent=True)
        self.kept = max(self.kept, len(replies))


class ReplayedModel(WrapperModel):
    """A redone segment's model: each reply the journal kept comes back as it was; the rest are asked and kept.

    A reply kept comes back with the calls (and call ids) it had, so their tools' steps find what they did.
    A streamed request (the runtime streams no redone segment; an agent's own event handler might) is
    asked again, as `WrapperModel` does, and kept by `Replies.keep` if a step depends on it.
    """

    def __init__(self, wrapped: Model, replies: Replies) -> None:
        super().__init__(wrapped)
        self.replies = replies

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        replies = self.replies

        async def ask() -> bytes:
            reply = await self.wrapped.request(messages, model_settings, model_request_parameters)
            return ModelMessagesTypeAdapter.dump_json([reply])

        data = await replies.journal.run(replies.key(replies.kept), ask, idempotent=True)
        replies.kept += 1
        [reply] = ModelMessagesTypeAdapter.validate_json(data)
        assert isinstance(reply, ModelResponse)
        return reply
