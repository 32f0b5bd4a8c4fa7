"""What the model reads of a decision that does not run the call: a rejection, a skip, an expiry, an error.

A rejection's wording is the agent's pick (sayso's, kagent's, hastekit's); a declined or dismissed form
and a client tool's error have a text of their own.

See docs/concepts/decisions.md#what-the-model-reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import assert_never

from .decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    Decision,
    Decline,
    Expired,
    Provide,
    Reject,
    Skip,
)


@dataclass(frozen=True, kw_only=True)
class RejectionText:
    """What the model reads when a person rejects a call: one text without a reason, one with it.

    sayso's own wording is the default; agents moving from kagent or hastekit keep the text their
    prompts were written against (`REJECTION_PRESETS`). See docs/concepts/decisions.md#what-the-model-reads.
    """

    plain: str
    """The text when the person gave no reason."""
    with_reason: str
    """The text when they gave one; `{reason}` stands for it."""

    def text(self, reason: str | None) -> str:
        return self.with_reason.replace("{reason}", reason) if reason else self.plain


REJECTION_PRESETS: dict[str, RejectionText] = {
    "sayso": RejectionText(plain="Declined by the person.", with_reason="Declined: {reason}"),
    "kagent": RejectionText(
        plain="Tool call was rejected by user.", with_reason="Tool call was rejected by user. Reason: {reason}"
    ),
    "hastekit": RejectionText(
        plain="Request to call this tool has been declined",
        with_reason="Request to call this tool has been declined: {reason}",
    ),
}
"""Named wordings an agent's `interrupt.rejection_text` may pick: sayso's, kagent's, hastekit's."""


def model_text(decision: Decision, *, rejection: RejectionText | None = None) -> str | None:
    """What the model reads for a decision that does not run the call, or `None` when it runs.

    `rejection` is the agent's wording of a rejected call (default: sayso's). See
    docs/concepts/decisions.md#what-the-model-reads.
    """
    match decision:
        case Expired(expires_at=at, reason=reason):
            said = f"Expired: no decision before {datetime.fromtimestamp(at, UTC):%Y-%m-%d %H:%M:%S} UTC"
            return f"{said}. {reason}" if reason else said
        case Reject(reason=reason):
            return (rejection or REJECTION_PRESETS["sayso"]).text(reason)
        case Skip(reason=reason):
            return f"Skipped: {reason or 'the person skipped this request'}"
        case ClientError(message=message):
            return f"Error: {message}"
        case Decline():
            return "Declined: the person declined what the server asked for."
        case Cancel():
            return "Cancelled: the person dismissed what the server asked for, so the call did not complete."
        case Approve() | Answer() | ClientResult() | Accept() | Provide():
            return None
        case _:
            assert_never(decision)
