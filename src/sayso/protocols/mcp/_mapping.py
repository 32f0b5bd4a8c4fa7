"""The one module that maps between sayso's requests and decisions and MCP elicitations, for sayso's `/mcp` server.

Every open request a paused run waits on is asked as one elicitation, and the client's
`ElicitResult` becomes the decision:

| request | asked as | accept | decline | cancel |
|---|---|---|---|---|
| approval | form: `decision` (approve/reject), `reason`, `scope` (if several) | approve or reject | reject | skip |
| question | form: a field per question, choices as an enum (several: an array) | the answers | skip | skip |
| input (workflows) | form: the response schema (or `{value}` if not an object) | provide | skip | skip |
| elicitation (a server below) | the server's own form or page, passed through | accept | decline | cancel |
| client tool | form: `result` (JSON or text) | the result | an error | skip |

Pure: the server does the I/O.
"""

from __future__ import annotations

import json

import mcp_types
from pydantic.json_schema import JsonSchemaValue

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
from ..._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    shown_args,
)

ElicitParams = mcp_types.ElicitRequestFormParams | mcp_types.ElicitRequestURLParams


def _who(request: Request) -> str:
    path = request.agent_path.split("/")
    return path[-1] if len(path) == 1 else f"{path[-1]} (for {'/'.join(path[:-1])})"


def elicitation_for(request: Request, *, problem: str | None = None) -> ElicitParams:
    """What the MCP client is asked for an open request; `problem` says why its last answer was refused."""
    params = _elicitation_for(request)
    if problem is not None:
        params = params.model_copy(update={"message": f"Not accepted: {problem}. {params.message}"})
    return params


def _elicitation_for(request: Request) -> ElicitParams:
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
            message=_approval_message(request), requested_schema=_approval_form(request)
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


def _approval_message(request: ApprovalRequest) -> str:
    lines = [
        f"{_who(request)} wants to run {request.tool_name} with {json.dumps(shown_args(request), ensure_ascii=False)}."
    ]
    lines.append(request.hint)
    if request.subject is not None:
        lines.append(f"Covers: {request.subject.label}.")
    if request.tool_info is not None and request.tool_info.destructive:
        lines.append("The tool's source says it may destroy data.")
    return " ".join(lines)


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
    return {"type": "object", "properties": properties, "required": ["decision"]}


def _question_form(request: QuestionRequest) -> JsonSchemaValue:
    properties: JsonSchemaValue = {}
    for index, question in enumerate(request.questions, 1):
        field: JsonSchemaValue = {"title": question.question}
        if question.choices and question.multiple:
            field.update(type="array", items={"type": "string", "enum": list(question.choices)}, minItems=1)
        elif question.choices:
            field.update(type="string", enum=list(question.choices))
        else:
            field.update(type="string", minLength=1)
        properties[f"answer_{index}"] = field
    return {"type": "object", "properties": properties, "required": list(properties)}


def _input_form(request: InputRequest) -> JsonSchemaValue:
    if not _wraps_value(request):
        return request.response_schema
    return {
        "type": "object",
        "properties": {"value": request.response_schema or {"type": "string"}},
        "required": ["value"],
    }


def _wraps_value(request: InputRequest) -> bool:
    """Whether an input's answer is asked as one `value` field (its schema is not a form of fields itself)."""
    schema = request.response_schema
    return not (schema.get("type") == "object" and isinstance(schema.get("properties"), dict))


def decision_from(request: Request, reply: mcp_types.ElicitResult) -> Decision:
    """The decision an MCP client's answer to `elicitation_for(request)` takes (the table above)."""
    content = reply.content or {}
    if isinstance(request, ElicitationRequest):
        if reply.action == "accept":
            return Accept(content=dict(content) if request.mode == "form" else None)
        return Decline() if reply.action == "decline" else Cancel()
    if reply.action == "cancel":
        return Skip(reason="the person dismissed the question in their MCP client")
    if isinstance(request, ApprovalRequest):
        reason = content.get("reason")
        if reply.action == "decline" or content.get("decision") != "approve":
            return Reject(reason=reason if isinstance(reason, str) and reason else None)
        scope = content.get("scope", "once")
        return Approve(scope=scope if scope in request.scopes else "once")
    if reply.action == "decline":
        if isinstance(request, ClientToolRequest):
            return ClientError(message="the person declined to run the tool")
        return Skip(reason="the person declined to answer")
    if isinstance(request, QuestionRequest):
        answers = []
        for index in range(1, len(request.questions) + 1):
            value = content.get(f"answer_{index}")
            answers.append(tuple(str(v) for v in value) if isinstance(value, list) else (str(value or ""),))
        return Answer(answers=tuple(answers))
    if isinstance(request, InputRequest):
        return Provide(value=content.get("value") if _wraps_value(request) else dict(content))
    assert isinstance(request, ClientToolRequest)
    raw = str(content.get("result", ""))
    try:
        return ClientResult(value=json.loads(raw))
    except ValueError:
        return ClientResult(value=raw)
