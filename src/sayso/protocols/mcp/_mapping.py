"""The one module that maps between sayso's requests and decisions and MCP elicitations, for sayso's `/mcp` server.

Every open request a paused run waits on is asked as one elicitation, and the client's
`ElicitResult` becomes the decision:

| request | asked as | accept | decline | cancel |
|---|---|---|---|---|
| approval | form: `decision`, `reason`, `scope` (if several), `feedback.*` | approve or reject | reject | skip |
| question | form: per question a pick of its choices (enum) and an own-words field | the answers | skip | skip |
| input (workflows) | form: the response schema, flat (`_flat`; `{value}` if no object) | provide | skip | skip |
| elicitation (a server below) | the server's own form or page, passed through | accept | decline | cancel |
| client tool | form: `result` (JSON or text) | the result | an error | skip |

An accepted answer is checked against the form that was sent before it becomes a decision: a value
outside an enum (an approval's `"APPROVE!"`, a scope never offered) is refused (`InvalidDecision`),
and the server asks again with the problem, never guessing a rejection or a narrower scope. A
question's choices are suggestions the person may always answer beside (docs/concepts/pauses.md#questions), so each is
sent as an optional pick from the choices plus an optional own-words field, and one of them must
be given. A server's own form (an elicitation from below) and a workflow's input are checked by
the runtime, against their own schemas.

Pure: the server does the I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types
from pydantic.json_schema import JsonSchemaValue

from ..._core.access import Principal, refusal
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
from ..._core.inputs import input_problems
from ..._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    shown_args,
)
from ..._core.votes import Vote, quorum, shown_standing_args
from ..._runtime import routing_json
from ...exceptions import InvalidDecision
from ._flat import flat_form, rebuilt

ElicitParams = mcp_types.ElicitRequestFormParams | mcp_types.ElicitRequestURLParams


def _who(request: Request) -> str:
    path = request.agent_path.split("/")
    return path[-1] if len(path) == 1 else f"{path[-1]} (for {'/'.join(path[:-1])})"


def elicitation_for(request: Request, *, problem: str | None = None, votes: Sequence[Vote] = ()) -> ElicitParams:
    """What the MCP client is asked for an open request; `problem` says why its last answer was refused.

    `votes`: those cast so far on a routed request, so the person reads where the quorum stands now
    (`Approvals: 1 of 2, waiting for finance.`) and the arguments the votes are about (an edit's).
    """
    params = _elicitation_for(request, votes)
    if problem is not None:
        params = params.model_copy(update={"message": f"Not accepted: {problem}. {params.message}"})
    return params


def _elicitation_for(request: Request, votes: Sequence[Vote] = ()) -> ElicitParams:
    if isinstance(request, ElicitationRequest):
        if request.mode == "url":
            assert request.url is not None
            return mcp_types.ElicitRequestURLParams(
                message=request.message, url=request.url, elicitation_id=request.elicitation_id or request.request_id
            )
        schema = request.requested_schema or {"type": "object", "properties": {}}
        return mcp_types.ElicitRequestFormParams(message=request.message, requested_schema=schema)
    if isinstance(request, ApprovalRequest):
        return mcp_types.ElicitRequestFormParams(
            message=_approval_message(request, votes), requested_schema=_approval_form(request)
        )
    if isinstance(request, QuestionRequest):
        message = " ".join(q.question for q in request.questions)
        return mcp_types.ElicitRequestFormParams(
            message=f"{_who(request)} asks: {message}", requested_schema=_question_form(request)
        )
    if isinstance(request, InputRequest):
        message = request.message
        if request.payload is not None:
            message += f"\n{json.dumps(request.payload, ensure_ascii=False)}"
        if request.why is not None:
            message += f"\n{request.why[0].upper()}{request.why[1:]}."
        return mcp_types.ElicitRequestFormParams(message=message, requested_schema=_input_form(request))
    assert isinstance(request, ClientToolRequest), f"no elicitation for a {request.kind} request"
    args = json.dumps(shown_args(request), ensure_ascii=False)
    return mcp_types.ElicitRequestFormParams(
        message=f"{_who(request)} asks the client to run {request.tool_name} with {args}: give its result.",
        requested_schema={
            "type": "object",
            "properties": {"result": {"type": "string", "title": "Result (JSON or text)"}},
            "required": ["result"],
        },
    )


def _approval_message(request: ApprovalRequest, votes: Sequence[Vote]) -> str:
    args = shown_standing_args(request, votes)
    lines = [f"{_who(request)} wants to run {request.tool_name} with {json.dumps(args, ensure_ascii=False)}."]
    lines.append(request.hint)
    if request.payload is not None:
        lines.append(json.dumps(request.payload, ensure_ascii=False))
    if request.why is not None:
        lines.append(f"{request.why[0].upper()}{request.why[1:]}.")
    if request.subject is not None:
        lines.append(f"Covers: {request.subject.label}.")
    if request.tool_info is not None and request.tool_info.destructive:
        lines.append("The tool's source says it may destroy data.")
    if request.routing is not None:
        # Who decides a routed request, and where its vote stands (docs/guides/routing.md).
        routed = routing_json(request, votes)
        names = ", ".join(p["name"] for p in routed["approvers"]["principals"]) or "nobody"
        lines.append(f"Decided by {', '.join(routed['approvers']['named'])} ({names}).")
        if "quorum" in routed:
            lines.append(f"Approvals: {routed['quorum']['text']}.")
    return " ".join(lines)


def others_decide(request: Request, votes: Sequence[Vote], caller: Principal) -> str | None:
    """Why `caller` is not asked a routed request: only its approvers decide it, or the caller's vote is in.

    `None` when the caller is asked. Asking again someone whose answer cannot count would loop.
    """
    if request.routing is None:
        return None
    refused = refusal(caller, owner=request.principal, agent_path=request.agent_path, routing=request.routing)
    standing = quorum(request.routing, votes, starter=request.principal, proposed=request.args)
    if refused is None and caller.name not in standing.approved_by:
        return None
    progress = f" (approvals: {standing.text})" if request.routing.approvals_required > 1 else ""
    return f"{request.tool_name} waits for {', '.join(request.routing.named)}{progress}"


def _approval_form(request: ApprovalRequest) -> JsonSchemaValue:
    properties: JsonSchemaValue = {
        "decision": {"type": "string", "enum": ["approve", "reject"], "title": "Decision"},
        "reason": {"type": "string", "title": "Reason", "description": "Why you reject (the agent reads it)."},
    }
    if len(request.scopes) > 1:
        properties["scope"] = {
            "type": "string",
            "enum": list(request.scopes),
            "title": "Remember",
            "description": "once: this call only; thread: for this conversation; always: every later call.",
            "default": "once",
        }
    if (feedback := _feedback_shape(request)) is not None:
        properties.update(flat_form(*feedback)["properties"])
    return {"type": "object", "properties": properties, "required": ["decision"]}


FEEDBACK = "feedback"
"""Where an approval's feedback fields sit on its form (`feedback.liked`), apart from `decision`, `reason`, `scope`."""


def _feedback_shape(request: ApprovalRequest) -> tuple[JsonSchemaValue, JsonSchemaValue] | None:
    """The feedback a tool asks for with its approval (`response_schema`), as an optional section of the form.

    Optional, so a rejection needs none of it; an approval without it is refused by the runtime, naming it.
    """
    schema = request.response_schema
    if schema is None:
        return None
    inner = schema if _is_form(schema) else {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    section = {"anyOf": [inner, {"type": "null"}], "title": "Feedback"}
    return {"type": "object", "properties": {FEEDBACK: section}}, schema


def _feedback(request: ApprovalRequest, content: Mapping[str, Any]) -> Any:
    """The feedback an accepted approval form gives, in the shape the tool asked for; `None` when none was given."""
    shape = _feedback_shape(request)
    if shape is None:
        return None
    given = {key: value for key, value in content.items() if key.startswith(f"{FEEDBACK}.")}
    value = rebuilt(*shape, given).get(FEEDBACK)
    if value is None or _is_form(request.response_schema or {}):
        return value
    return value.get("value")


def _question_form(request: QuestionRequest) -> JsonSchemaValue:
    properties: JsonSchemaValue = {}
    required: list[str] = []
    for index, question in enumerate(request.questions, 1):
        field: JsonSchemaValue = {"title": question.question}
        if not question.choices:
            field.update(type="string", minLength=1)
            properties[f"answer_{index}"] = field
            required.append(f"answer_{index}")
            continue
        if question.multiple:
            field.update(type="array", items={"type": "string", "enum": list(question.choices)})
        else:
            field.update(type="string", enum=list(question.choices))
        properties[f"answer_{index}"] = field
        properties[f"answer_{index}_own"] = {
            "type": "string",
            "title": f"{question.question} (or in your own words)",
            "description": "Your own answer" + (", beside the ones picked." if question.multiple else ", instead."),
        }
    return {"type": "object", "properties": properties, "required": required}


def _question_answers(request: QuestionRequest, content: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    """The answers a question form's content gives: each question's pick(s) and own words, at least one each."""
    answers: list[tuple[str, ...]] = []
    for index, question in enumerate(request.questions, 1):
        picked = content.get(f"answer_{index}")
        own = content.get(f"answer_{index}_own")
        given = [str(v) for v in picked] if isinstance(picked, list) else ([picked] if picked else [])
        if isinstance(own, str) and own.strip():
            given.append(own.strip())
        if not given:
            raise InvalidDecision(request.request_id, f"question {question.question!r} needs an answer")
        if not question.multiple and len(given) > 1:
            raise InvalidDecision(
                request.request_id, f"question {question.question!r} takes one answer: a choice or your own words"
            )
        answers.append(tuple(given))
    return tuple(answers)


def _input_form(request: InputRequest) -> JsonSchemaValue:
    return flat_form(*_input_shape(request))


def _input_shape(request: InputRequest) -> tuple[JsonSchemaValue, JsonSchemaValue]:
    """The object an input is asked as (its own schema, or one `value` field), and the root its `$ref`s point into."""
    schema = request.response_schema
    if not _wraps_value(request):
        return schema, schema
    return {"type": "object", "properties": {"value": schema or {"type": "string"}}, "required": ["value"]}, schema


def _wraps_value(request: InputRequest) -> bool:
    """Whether an input's answer is asked as one `value` field (its schema is not a form of fields itself)."""
    return not _is_form(request.response_schema)


def _is_form(schema: JsonSchemaValue) -> bool:
    return schema.get("type") == "object" and isinstance(schema.get("properties"), dict)


def decision_from(request: Request, reply: mcp_types.ElicitResult) -> Decision:
    """The decision an MCP client's answer to `elicitation_for(request)` takes (the table above).

    Raises:
        InvalidDecision: accepted content that does not fit the form sent (nothing is decided).
    """
    content = dict(reply.content or {})
    if isinstance(request, ElicitationRequest):
        if reply.action == "accept":
            return Accept(content=content if request.mode == "form" else None)
        return Decline() if reply.action == "decline" else Cancel()
    if reply.action == "cancel":
        return Skip(reason="the person dismissed the question in their MCP client")
    if reply.action == "accept" and not isinstance(request, InputRequest):
        _check_fits(request, content)
    if isinstance(request, ApprovalRequest):
        reason = content.get("reason")
        if reply.action == "decline" or content.get("decision") == "reject":
            return Reject(reason=reason if isinstance(reason, str) and reason else None)
        scope = next((offered for offered in request.scopes if offered == content.get("scope", "once")), None)
        if scope is None:
            raise InvalidDecision(request.request_id, f"scope {content.get('scope')!r} was not offered")
        return Approve(scope=scope, payload=_feedback(request, content))
    if reply.action == "decline":
        if isinstance(request, ClientToolRequest):
            return ClientError(message="the person declined to run the tool")
        return Skip(reason="the person declined to answer")
    if isinstance(request, QuestionRequest):
        return Answer(answers=_question_answers(request, content))
    if isinstance(request, InputRequest):
        value = rebuilt(*_input_shape(request), content)
        return Provide(value=value.get("value") if _wraps_value(request) else value)
    assert isinstance(request, ClientToolRequest)
    raw = str(content.get("result", ""))
    try:
        return ClientResult(value=json.loads(raw))
    except ValueError:
        return ClientResult(value=raw)


def _check_fits(request: Request, content: Mapping[str, Any]) -> None:
    """Refuse accepted content that breaks the form sent for `request` (a value outside its enum, say)."""
    params = _elicitation_for(request)
    assert isinstance(params, mcp_types.ElicitRequestFormParams)
    problems = input_problems(params.requested_schema, content)
    if problems:
        raise InvalidDecision(request.request_id, "; ".join(problems))
