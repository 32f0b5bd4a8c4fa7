"""Size limits: how much one message, edit or answer may carry, checked the same on every interface.

See docs/guides/operations.md#limits.

The runtime applies these inside its verbs, so REST, A2A, AG-UI, the CLI and Python refuse the
same things; the HTTP edge also caps whole request bodies before anything is parsed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..exceptions import InvalidDecision, InvalidInput, TooLarge
from .audit import canonical_json
from .decisions import DECISION_ADAPTER, Approve, Decision
from .finite import lone_surrogate, nul_character


@dataclass(frozen=True, kw_only=True)
class Limits:
    """The configured sizes (see the `limits:` block of the configuration)."""

    message_chars: int = 100_000
    argument_bytes: int = 100_000
    answer_bytes: int = 100_000


_NO_NUL = "no stored text may hold one, so leave it out"


def check_message(message: str, limits: Limits) -> None:
    """Refuse a user message with no text, or longer than the limit.

    A blank message would start a run the model answers with a guess, so it is refused here,
    once for every interface (REST, the CLI, Python, and the protocols after their own parsing).

    Raises:
        InvalidInput: the message is empty or only white space, or holds a lone surrogate or a NUL character.
        TooLarge: the message is too long.
    """
    if not message.strip():
        raise InvalidInput("the message is empty: say something to the agent", field="message")
    if lone_surrogate(message) is not None:
        raise InvalidInput(
            "the message holds a lone surrogate, which is not Unicode text; send it as UTF-8", field="message"
        )
    if nul_character(message) is not None:
        raise InvalidInput(f"the message holds a NUL character (U+0000); {_NO_NUL}", field="message")
    if len(message) > limits.message_chars:
        raise TooLarge(
            f"the message has {len(message)} characters; the limit is {limits.message_chars}",
            field="message",
            limit=limits.message_chars,
        )


def check_decision(request_id: str, decision: Decision, limits: Limits) -> None:
    """Refuse edited arguments or an answer larger than its limit, before anything is recorded.

    The feedback sent with an approval (`Approve.payload`) is an answer too. Text that cannot be
    measured, as it cannot be stored, because it holds a lone surrogate is refused first, and so is text holding a
    NUL character, which PostgreSQL cannot store (`finite`).

    Raises:
        InvalidDecision: some text of the decision holds a lone surrogate or a NUL character; the message names where.
        TooLarge: the edit or the answer is too large.
    """
    given = DECISION_ADAPTER.dump_python(decision, exclude={"kind"})
    where = lone_surrogate(given)
    if where is not None:
        raise InvalidDecision(
            request_id, f"{where}: the text holds a lone surrogate, which is not Unicode text; send it as UTF-8"
        )
    where = nul_character(given)
    if where is not None:
        raise InvalidDecision(request_id, f"{where}: the text holds a NUL character (U+0000); {_NO_NUL}")
    if isinstance(decision, Approve):
        if decision.edited_args is not None:
            size = len(canonical_json(decision.edited_args).encode())
            if size > limits.argument_bytes:
                raise TooLarge(
                    f"request {request_id!r}: the edited arguments take {size} bytes; "
                    f"the limit is {limits.argument_bytes}",
                    field="edited_args",
                    limit=limits.argument_bytes,
                    request_id=request_id,
                )
        if decision.payload is None:
            return
        size = len(DECISION_ADAPTER.dump_json(Approve(payload=decision.payload)))
    else:
        size = len(DECISION_ADAPTER.dump_json(decision))
    if size > limits.answer_bytes:
        raise TooLarge(
            f"request {request_id!r}: the answer takes {size} bytes; the limit is {limits.answer_bytes}",
            field="answer",
            limit=limits.answer_bytes,
            request_id=request_id,
        )
