"""How the CLI reads a decision from `sayso decide`'s arguments: approve, reject, answer, provide and so on.

`parse_decision` turns an action word, its values and options into one of the runtime's decisions,
checking typed values against the request's schema where it has one.
"""

from __future__ import annotations

import json
from typing import Any

import typer
from pydantic.json_schema import JsonSchemaValue

from .._core.decisions import (
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
    decisions_taken,
)
from .._core.requests import ApprovalRequest, ElicitationRequest, InputRequest, Request, Scope
from ..exceptions import InvalidDecision
from ._fill import yes_or_no
from ._render import schema_type, text_answer

_ACTIONS = ("approve", "reject", "skip", "answer", "provide", "result", "error", "accept", "done", "decline", "cancel")
_OPTION_ACTIONS = {
    "--args": ("approve",),
    "--scope": ("approve",),
    "--reason": ("reject", "skip"),
    "--answers": ("answer",),
}
"""Which actions read each option of `sayso decide`."""
_KIND_OF_ACTION = {"result": "client_result", "error": "client_error", "done": "accept"}
"""The kind of decision an action makes where its word is another (and `answer` to a workflow's input: `provide`)."""
_ACTION_OF_KIND = {"provide": "answer", "client_result": "result", "client_error": "error"}
"""The action that makes each kind of decision named otherwise (`accept`: `done` for a page, see `_action_for`)."""


def parse_decision(
    action: str,
    values: list[str],
    *,
    reason: str | None,
    args: str | None,
    scope: str,
    answers: str | None,
    request: Request | None = None,
) -> Decision:
    """Turn the command line's words into a decision, or stop with a message naming the problem.

    `request` is needed for `answer` (a workflow's input takes one value, not one per question)
    and for `approve` with feedback. An option the action does not read is refused, not dropped:
    `reject --args ...` must not look like it edited anything.
    """
    given = {"--args": args is not None, "--scope": scope != "once", "--reason": reason is not None}
    given["--answers"] = answers is not None
    for option, used in given.items():
        takers = _OPTION_ACTIONS[option]
        if used and action not in takers and action in _ACTIONS:
            raise typer.BadParameter(f"{option} goes with {' or '.join(takers)}, not with {action}")
    _refuse_twice_said(action, values, reason=reason, answers=answers)
    if action == "approve":
        return _approve(values, args=args, scope=scope, request=request)
    if action in ("answer", "provide") and isinstance(request, InputRequest):
        return _provide(action, values, answers, request)
    if action == "reject":
        return Reject(reason=reason or (" ".join(values) or None))
    if action == "skip":
        return Skip(reason=reason or (" ".join(values) or None))
    if action == "answer":
        return _answer(values, answers)
    if action == "result":
        raw = " ".join(values)
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        return ClientResult(value=value)
    if action == "error":
        if not values:
            raise typer.BadParameter("error needs a message")
        return ClientError(message=" ".join(values))
    if action in ("accept", "done", "decline", "cancel"):
        return _elicitation_decision(action, values)
    raise typer.BadParameter(
        f"unknown action {action!r}; use approve, reject, skip, answer, result, error, accept, done, decline or cancel"
    )


def check_action_fits(action: str, request: Request) -> None:
    """Refuse an action `request` does not take, naming the ones it does as `sayso decide` spells them.

    The runtime names the kinds of decision (`provide`, `client_result`), which this command takes
    as `answer` and `result`: a person told "takes provide" typed a word `--help` never showed.

    Raises:
        InvalidDecision: the request takes other decisions (nothing is recorded).
    """
    taken = decisions_taken(request.kind)
    makes = (
        "provide" if action == "answer" and isinstance(request, InputRequest) else _KIND_OF_ACTION.get(action, action)
    )
    if not taken or makes in taken:
        return  # a delegate's request is the runtime's to refuse: it says where it is answered
    words = [_action_for(kind, request) for kind in taken]
    either = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
    raise InvalidDecision(request.request_id, f"this {request.kind} request takes {either}, not {action}")


def _action_for(kind: str, request: Request) -> str:
    """The action of `sayso decide` that makes a decision of `kind` on `request`."""
    if kind == "accept" and isinstance(request, ElicitationRequest) and request.mode == "url":
        return "done"  # a page visited, not a form filled in
    return _ACTION_OF_KIND.get(kind, kind)


def _refuse_twice_said(action: str, values: list[str], *, reason: str | None, answers: str | None) -> None:
    """Refuse words that say again what an option says, or words an action has no use for.

    Taking one and dropping the other would record a decision the person did not read back:
    `reject a --reason b` recorded `b` alone, `decline some words` a plain decline.
    """
    shown = " ".join(values)
    if values and reason is not None and action in ("reject", "skip"):
        raise typer.BadParameter(f"{action} got a reason twice ({shown!r} and --reason): give one of them")
    if values and answers is not None and action == "answer":
        raise typer.BadParameter(f"answer got answers twice ({shown!r} and --answers): give one of them")
    if values and action in ("done", "decline", "cancel"):
        raise typer.BadParameter(f"{action} takes no value (got {shown!r})")


def _provide(action: str, values: list[str], answers: str | None, request: InputRequest) -> Provide:
    """A workflow input's one value, typed as its schema asks (`answer` and `provide` alike)."""
    how = f"{action} VALUE: the input as JSON (plain text where it asks for text)"
    if answers is not None:
        raise typer.BadParameter(f"a workflow's input takes one value, not --answers (questions' answers); use {how}")
    if not values:
        raise typer.BadParameter(f"{action} needs the input's value; use {how}")
    return Provide(value=_one_value(action, values, request.response_schema))


def _answer(values: list[str], answers: str | None) -> Answer:
    """Answers to questions: one word per question, or every answer as JSON (`--answers`)."""
    if answers is not None:
        parsed = _json_option("--answers", answers)
        if not isinstance(parsed, list) or not all(
            isinstance(a, list) and all(isinstance(s, str) for s in a) for a in parsed
        ):
            raise typer.BadParameter("--answers must be a JSON list of lists of strings")
        return Answer(answers=tuple(tuple(a) for a in parsed))
    if not values:
        raise typer.BadParameter("answer needs one value per question (or --answers JSON)")
    return Answer(answers=tuple((v,) for v in values))


def _elicitation_decision(action: str, values: list[str]) -> Decision:
    """An answer to a server's form (`accept` with its content) or page (`done`), or `decline` / `cancel`."""
    if action == "decline":
        return Decline()
    if action == "cancel":
        return Cancel()
    if action != "accept" or not values:
        return Accept(content=None)
    takes = "accept takes the form's content as a JSON object of fields"
    typed = " ".join(values)
    try:
        content = json.loads(typed)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{takes}; {typed!r} is not JSON ({exc})") from None
    if content is not None and not isinstance(content, dict):
        raise typer.BadParameter(takes)
    return Accept(content=content)


def _approve(values: list[str], *, args: str | None, scope: str, request: Request | None) -> Approve:
    """An approval from the command line: a scope, edited arguments, and the feedback the tool asked for."""
    if scope not in ("once", "thread", "always"):
        raise typer.BadParameter(f"--scope must be once, thread or always, not {scope!r}")
    edited = _json_option("--args", args) if args is not None else None
    if edited is not None and not isinstance(edited, dict):
        raise typer.BadParameter("--args must be a JSON object of arguments")
    checked_scope: Scope = scope  # type: ignore[assignment]  # narrowed by the membership test above
    schema = request.response_schema if isinstance(request, ApprovalRequest) else None
    if values and isinstance(request, ApprovalRequest) and schema is None:
        # Words after `approve` are feedback only a tool that asks for it reads; taken silently they
        # would approve the call as it stands while the person meant to change it.
        raise typer.BadParameter(
            f"this approval takes no value after approve (got {' '.join(values)!r}); to change the call's "
            "arguments use --args JSON, to remember the approval use --scope thread or --scope always"
        )
    payload = _one_value("approve", values, schema) if values else None
    return Approve(scope=checked_scope, edited_args=edited, payload=payload)


def _one_value(action: str, values: list[str], schema: JsonSchemaValue | None) -> Any:
    """The one value a schema asks for, typed at the command line: the words as typed where it asks for text, else JSON.

    Two JSON values were joined with a space into a text that failed the schema as a whole, so a
    value it does not read is refused, named, rather than read into the first.
    """
    if schema is not None and text_answer(schema):
        return " ".join(values)
    if schema is not None and schema_type(schema).get("type") == "boolean" and len(values) == 1:
        return yes_or_no(values[0])
    if len(values) > 1:
        extra = ", ".join(repr(v) for v in values[1:])
        raise typer.BadParameter(f"{action} takes one value (JSON, quoted as one word), so not also {extra}")
    try:
        return json.loads(values[0])
    except json.JSONDecodeError:
        return values[0]  # the schema check names what is wrong with it


def _json_option(name: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{name} is not valid JSON: {exc}") from None
