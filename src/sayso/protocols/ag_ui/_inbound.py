"""AG-UI inbound: a `RunAgentInput`'s resume, tool messages, tools and forwarded props as sayso's inputs.

`RunAgentInput.resume` entries become decisions as in kaboo's answer table, tool messages
answer client tools (and, in kaboo's dialect, its `ask_user` browser tool), `context` goes
with the tools it names, and kaboo's host-kept grants come from `forwardedProps.kaboo_grants`.
Everything here is pure; ids are looked up in what the server stored, never taken from pause
state the client sends back. The outbound half is in `_mapping`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ag_ui.core import Context, ResumeEntry, Tool, ToolMessage, UserMessage
from ag_ui.core import TextPart as UserTextPart
from pydantic.json_schema import JsonSchemaValue

from ..._core.access import Principal
from ..._core.decisions import (
    Accept,
    Answer,
    Approve,
    Cancel,
    ClientError,
    ClientResult,
    Decision,
    Decline,
    Provide,
    Reject,
    Skip,
)
from ..._core.grants import Grant
from ..._core.requests import (
    SCOPES_BY_WIDTH,
    ClientTool,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
)
from ...exceptions import InvalidInput
from ._mapping import (
    KABOO_GRANTS,
    Shown,
    _shown_as_call,
    approval_schema,
    elicitation_schema,
    question_schema,
    refused,
    shown_call_id,
)


def decisions_from_resume(
    open_requests: Sequence[Request],
    entries: Sequence[ResumeEntry],
    tool_messages: Sequence[ToolMessage],
    *,
    run_id: str,
    streamed_calls: Collection[str] = (),
    kaboo: bool = False,
) -> dict[str, Decision]:
    """The decisions a resume takes, by request id, found by interrupt id and the tool call id shown (`run_id`'s).

    Requests the resume leaves out are not here (the caller counts them as skipped). A tool
    message for one of `streamed_calls` (calls the run made, whose results the client was sent
    and may echo back) answers nothing.

    Raises:
        InvalidInput: an entry names no open request, names one twice, or does not fit it; a tool
            message names a call nobody made (`field` is `RESUME`).
    """
    by_id = {r.request_id: r for r in open_requests if not _shown_as_call(r, kaboo=kaboo)}
    by_call = {shown_call_id(r, run_id=run_id): r for r in open_requests if _shown_as_call(r, kaboo=kaboo)}
    decided: dict[str, Decision] = {}
    for entry in entries:
        request = by_id.get(entry.interrupt_id)
        if not isinstance(request, Shown):
            raise refused(f"interrupt {entry.interrupt_id!r} is not open on this thread")
        if request.request_id in decided:
            raise refused(f"interrupt {entry.interrupt_id!r} is answered twice")
        decided[request.request_id] = decision_from_entry(request, entry)
    for message in tool_messages:
        client = by_call.get(message.tool_call_id)
        if client is None and message.tool_call_id in streamed_calls:
            continue  # a tool message from earlier in the history the client replays
        if client is None:
            # Never passed over: the call it meant to answer would be skipped, and the answer lost.
            raise refused(f"tool call {message.tool_call_id!r} is not a call of this run")
        if client.request_id in decided:
            raise refused(f"tool call {message.tool_call_id!r} is answered twice")
        decided[client.request_id] = (
            _ask_user_answer(client, message) if isinstance(client, QuestionRequest) else _client_answer(message)
        )
    return decided


def decision_from_entry(request: Shown, entry: ResumeEntry) -> Decision:
    """One resume entry as a decision, per kaboo's answer table; only `approved` runs a gated call.

    A payload is read whole: each key is one the interrupt's `responseSchema` names (for a `cancelled` entry,
    only `reason`), and a `reason` is text. A key sayso does not read (a misspelled `toolInput`, say) refuses
    the resume, so the person's edit or scope is never dropped while the call runs as proposed. A resolved
    workflow input's payload is the answer itself (checked against its schema when decided).
    """
    if entry.status == "cancelled":
        reason = _skip_reason(entry)
        return Cancel() if isinstance(request, ElicitationRequest) else Skip(reason=reason)
    if isinstance(request, InputRequest):
        return Provide(value=entry.payload)
    if isinstance(request, ElicitationRequest):
        return _elicitation_answer(entry, _payload(entry, elicitation_schema(request)))
    if isinstance(request, QuestionRequest):
        return Answer(answers=_answers(entry.interrupt_id, _payload(entry, question_schema(request)).get("answers")))
    payload = _payload(entry, approval_schema(request))
    status = payload.get("status")
    if status == "approved":
        scope = payload.get("scope", "once")
        if scope not in SCOPES_BY_WIDTH:
            raise refused(f"interrupt {entry.interrupt_id!r}: scope must be once, thread or always")
        edited = payload.get("tool_input")
        if edited is not None and not isinstance(edited, dict):
            raise refused(f"interrupt {entry.interrupt_id!r}: tool_input must be an object")
        _reason(entry.interrupt_id, payload.get("reason"))
        return Approve(scope=scope, edited_args=edited, payload=payload.get("payload"))
    if status == "cancelled":
        return Reject(reason=_reason(entry.interrupt_id, payload.get("reason")))
    raise refused(f"interrupt {entry.interrupt_id!r}: payload status must be 'approved' or 'cancelled'")


def _payload(entry: ResumeEntry, schema: JsonSchemaValue) -> Mapping[str, Any]:
    """A resolved entry's payload: an object whose every key is one `schema` (the interrupt's `responseSchema`) names.

    Raises:
        InvalidInput: it is no object, or has a key the schema does not name (`field` is `RESUME`).
    """
    payload = entry.payload
    if not isinstance(payload, dict):
        raise refused(f"interrupt {entry.interrupt_id!r}: a resolved entry needs an object payload")
    _only_keys(entry.interrupt_id, payload, tuple(schema.get("properties", {})))
    return payload


def _skip_reason(entry: ResumeEntry) -> str | None:
    """The reason a `cancelled` entry gives: none, or `payload: {reason}` with text.

    Raises:
        InvalidInput: the payload is neither absent nor `{reason?}`, or its reason is not text.
    """
    if entry.payload is None:
        return None
    if not isinstance(entry.payload, dict):
        raise refused(f"interrupt {entry.interrupt_id!r}: a cancelled entry's payload is an object, {{reason?}}")
    _only_keys(entry.interrupt_id, entry.payload, ("reason",))
    return _reason(entry.interrupt_id, entry.payload.get("reason"))


def _only_keys(interrupt_id: str, payload: Mapping[str, Any], known: tuple[str, ...]) -> None:
    unknown = [key for key in payload if key not in known]
    if unknown:
        raise refused(
            f"interrupt {interrupt_id!r}: {unknown[0]!r} is not a key sayso reads in its payload, "
            f"which takes {', '.join(known)}"
        )


def _reason(interrupt_id: str, value: Any) -> str | None:
    """A rejection's or skip's reason: text, or none (absent, `null` or empty); anything else is refused."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise refused(f"interrupt {interrupt_id!r}: reason must be text")
    return value or None


def _elicitation_answer(entry: ResumeEntry, payload: Mapping[str, Any]) -> Decision:
    """A resolved entry for an elicitation: `{action, content?}` says what to send."""
    action = payload.get("action")
    if action == "decline":
        return Decline()
    if action == "cancel":
        return Cancel()
    if action != "accept":
        raise refused(f"interrupt {entry.interrupt_id!r}: payload action must be 'accept', 'decline' or 'cancel'")
    content = payload.get("content")
    if content is not None and not isinstance(content, dict):
        raise refused(f"interrupt {entry.interrupt_id!r}: content must be an object of the form's fields")
    return Accept(content=content)


def _answers(interrupt_id: str, raw: Any) -> tuple[tuple[str, ...], ...]:
    if not isinstance(raw, list):
        raise refused(f"interrupt {interrupt_id!r}: answers must be a list, one {{answer: [...]}} per question")
    answers = []
    for item in raw:
        values = item.get("answer") if isinstance(item, dict) else item
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise refused(f"interrupt {interrupt_id!r}: each answer is a list of strings")
        answers.append(tuple(values))
    return tuple(answers)


def _client_answer(message: ToolMessage) -> Decision:
    if message.error:
        return ClientError(message=message.error)
    content = message.content
    if isinstance(content, str):
        try:
            return ClientResult(value=json.loads(content))
        except ValueError:
            return ClientResult(value=content)
    return ClientResult(value=[part.model_dump(mode="json", by_alias=True, exclude_none=True) for part in content])


def _ask_user_answer(request: QuestionRequest, message: ToolMessage) -> Decision:
    """The answers in the result of kaboo's `ask_user` browser tool.

    Read: `[{answer: [...]}]`, `[{question, answer}]`, `{answers: [...]}` or, for one question,
    plain text; an error or a "Skipped: ..." text skips the question.
    """
    if message.error:
        return Skip(reason=message.error)
    value = _client_answer(message)
    raw = value.value if isinstance(value, ClientResult) else None
    if isinstance(raw, str) and raw.startswith("Skipped:"):
        return Skip(reason=raw.removeprefix("Skipped:").strip() or None)
    if isinstance(raw, dict) and "answers" in raw:
        raw = raw["answers"]
    if isinstance(raw, str) and len(request.questions) == 1:
        raw = [[raw]]
    return Answer(answers=_answers(message.tool_call_id, raw))


def client_tools(tools: Sequence[Tool], context: Sequence[Context]) -> list[ClientTool]:
    """The client's tools, each with the context entries that name it; it reaches only the agents allowed it.

    An entry names a tool when its `description` is the tool's name, or starts with it and a colon.
    Context that names no declared tool is not passed on: sayso cannot tell which agent may read it.
    A tool without `parameters` (or with `{}`) takes an object; any other value is passed on as it came,
    for the start verb to refuse what is no JSON Schema object (`sayso._core.client_tools`).
    """
    shared = {t.name: [c.value for c in context if _names(c.description, t.name)] for t in tools}
    return [
        ClientTool(
            name=t.name,
            description=t.description,
            parameters={"type": "object"} if t.parameters is None or t.parameters == {} else t.parameters,
            context="\n".join(shared[t.name]) or None,
        )
        for t in tools
    ]


def _names(description: str, tool: str) -> bool:
    text = description.strip()
    return text == tool or text.startswith(f"{tool}:")


def host_grants(forwarded_props: Any, *, principal: Principal, agent: str, thread_id: str) -> list[Grant] | None:
    """The remembered approvals a kaboo host sends; `None` when it sends none, meaning it remembers nothing.

    The host sends them as `forwardedProps.kaboo_grants: [{tool, subject, scope}]` with every run;
    they are the caller's own, for the agent the run talks to (`agent`) and no other.

    Raises:
        InvalidInput: a grant that is not `{tool, subject, scope}` with scope thread or always: a permission
            that cannot be read is refused, never widened.
    """
    raw = forwarded_props.get(KABOO_GRANTS) if isinstance(forwarded_props, dict) else None
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InvalidInput(
            "forwardedProps.kaboo_grants must be a list of {tool, subject, scope}", field="forwardedProps"
        )
    grants: list[Grant] = []
    for index, entry in enumerate(raw):
        tool = entry.get("tool") if isinstance(entry, dict) else None
        subject = entry.get("subject") if isinstance(entry, dict) else None
        scope = entry.get("scope") if isinstance(entry, dict) else None
        key = subject.get("key") if isinstance(subject, dict) else subject
        label = subject.get("label") if isinstance(subject, dict) else None
        if not isinstance(tool, str) or not isinstance(key, str) or scope not in ("thread", "always"):
            raise InvalidInput(
                f"forwardedProps.kaboo_grants[{index}] must be {{tool, subject, scope: thread | always}}",
                field="forwardedProps",
            )
        grants.append(
            Grant(
                grant_id=f"kaboo:{index}",
                tool=tool,
                subject_key=key,
                subject_label=label if isinstance(label, str) else key,
                scope=scope,
                principal=principal.name,
                agent=agent,
                thread_id=thread_id if scope == "thread" else None,
                created_at=0.0,
            )
        )
    return grants


def text_of(message: UserMessage) -> str:
    """A user message's text: its content, or its text parts joined (what else it carries is not read)."""
    if isinstance(message.content, str):
        return message.content
    return "\n".join(part.text for part in message.content if isinstance(part, UserTextPart))


def moves_on(entries: Sequence[ResumeEntry], text: str | None) -> bool:
    """Whether an input moves on from a pause: it cancels every interrupt it names and carries a new message."""
    return bool(entries) and all(e.status == "cancelled" for e in entries) and bool(text and text.strip())


def trailing(messages: Sequence[Any]) -> list[UserMessage | ToolMessage]:
    """The user and tool messages the history ends with, oldest first, back to its last message of another role.

    Only these can be new: whatever comes before the last assistant message the client holds was
    already there when the server streamed that message.
    """
    out: list[UserMessage | ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, UserMessage | ToolMessage):
            break
        out.append(message)
    return list(reversed(out))
