"""How runs and requests look in the terminal."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic.json_schema import JsonSchemaValue
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from .._core.access import LOCAL_NAME
from .._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    is_remote_call,
    shown_args,
)
from .._core.votes import Vote, quorum, shown_standing_args
from ._pasted import config_word, sayso_command

if TYPE_CHECKING:
    from .._core.audit import AuditRecord
    from .._core.grants import Grant
    from .._runtime import InboxPage, RunResult, Sayso


def _who(request: Request) -> str:
    path = request.agent_path.split("/")
    if len(path) == 1:
        return path[0]
    return f"{path[-1]} (for {'/'.join(path[:-1])})"


def schema_type(schema: JsonSchemaValue, root: JsonSchemaValue | None = None) -> JsonSchemaValue:
    """A schema with its `$ref` followed and an optional (`X | None`) reduced to `X`."""
    root = root if root is not None else schema
    for _ in range(20):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/"):
            break
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        schema = node if isinstance(node, dict) else {}
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        real = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
        if len(real) == 1:
            return schema_type(real[0], root)
    return schema


def example_answer(schema: JsonSchemaValue, root: JsonSchemaValue | None = None) -> Any:
    """A placeholder answer with the shape `schema` asks for (its required fields filled), to edit and send."""
    root = root if root is not None else schema
    schema = schema_type(schema, root)
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        return {name: example_answer(properties[name], root) for name in required if name in properties}
    return {"string": "...", "integer": 0, "number": 0, "boolean": True, "array": []}.get(str(kind))


def text_answer(schema: JsonSchemaValue) -> bool:
    """Whether an answer to `schema` is plain text (a string schema), typed without JSON quoting."""
    return schema_type(schema).get("type") == "string"


def typed_args(args: Mapping[str, Any], schema: JsonSchemaValue | None) -> dict[str, Any]:
    """`args` with each value typed as the tool's schema asks (`"50"` for a number is `50`), to edit and send.

    A model (or a script) may write a number as text; the tool took it, lax, but edited arguments
    are checked strictly against the schema, so the suggested edit must carry the typed value.
    """
    properties = schema_type(schema).get("properties") if schema else None
    if schema is None or not isinstance(properties, dict):
        return dict(args)
    return {name: _typed(value, properties.get(name), schema) for name, value in args.items()}


def _typed(value: Any, spec: Any, root: JsonSchemaValue) -> Any:
    if not isinstance(value, str) or not isinstance(spec, dict):
        return value
    kind = schema_type(spec, root).get("type")
    if kind not in ("number", "integer", "boolean", "array", "object"):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return value
    fits = {
        "number": isinstance(parsed, int | float) and not isinstance(parsed, bool),
        "integer": isinstance(parsed, int) and not isinstance(parsed, bool),
        "boolean": isinstance(parsed, bool),
        "array": isinstance(parsed, list),
        "object": isinstance(parsed, dict),
    }[kind]
    return parsed if fits else value


def deciding_as(request: Request, votes: Sequence[Vote] = ()) -> tuple[str | None, tuple[str, ...]]:
    """Who the printed commands decide as (`None`: `local`, the default), and who else may.

    Routed, that is an approver yet to vote (a routing means the config names principals); else the
    run's own principal. Without `--principal` a pasted command acts as `local`, whom a config with
    principals refuses for a routed request, or for another principal's run.
    """
    if request.routing is None:
        return (None if request.principal in (None, LOCAL_NAME) else request.principal), ()
    latest = max((v.round for v in votes), default=0)
    voted = {v.principal for v in votes if v.round == latest}
    waiting = [name for name in request.routing.deciders(request.principal) if name not in voted]
    return (waiting[0], tuple(waiting[1:])) if waiting else (None, ())


def answer_commands(request: Request, config: str, votes: Sequence[Vote] = ()) -> list[str]:
    """The exact `sayso decide` commands that answer `request`, ready to paste into a shell (as `deciding_as`)."""
    who, _ = deciding_as(request, votes)
    return [f"{c} --principal {shlex.quote(who)}" if who else c for c in _commands(request, config, votes)]


def _commands(request: Request, config: str, votes: Sequence[Vote]) -> list[str]:
    base = f"{sayso_command()} decide {config_word(config)} {request.request_id}"
    if isinstance(request, InputRequest):
        if text_answer(request.response_schema):
            answer = f"{base} answer {shlex.quote('your answer')}"
        else:
            answer = (
                f"{base} answer {shlex.quote(json.dumps(example_answer(request.response_schema), ensure_ascii=False))}"
            )
        return [answer, f"{base} skip"]
    if isinstance(request, ApprovalRequest):
        approve = f"{base} approve"
        if request.response_schema is not None:
            approve += f" {shlex.quote(json.dumps(example_answer(request.response_schema), ensure_ascii=False))}"
        commands = [approve, f"{base} reject --reason {shlex.quote('your reason')}"]
        if not is_remote_call(request):
            edited = json.dumps(
                typed_args(shown_standing_args(request, votes), request.args_schema), ensure_ascii=False
            )
            commands.append(f"{base} approve --args {shlex.quote(edited)}")
        wider = [s for s in request.scopes if s != "once"]
        if wider:
            commands.append(f"{base} approve --scope {wider[-1]}")
        return commands
    if isinstance(request, QuestionRequest):
        answers = [q.choices[0] if q.choices else "your answer" for q in request.questions]
        return [f"{base} answer {' '.join(shlex.quote(a) for a in answers)}", f"{base} skip"]
    if isinstance(request, ElicitationRequest):
        if request.mode == "url":
            return [f"{base} done", f"{base} decline", f"{base} cancel"]
        example = json.dumps(example_content(request.requested_schema or {}), ensure_ascii=False)
        return [f"{base} accept {shlex.quote(example)}", f"{base} decline", f"{base} cancel"]
    return [f"{base} result {shlex.quote('{}')}", f"{base} error {shlex.quote('what went wrong')}"]


def print_request(
    console: Console,
    request: Request,
    *,
    index: int | None = None,
    config: str | None = None,
    votes: Sequence[Vote] = (),
) -> None:
    """A request's panel, then (given the config path) the commands that answer it, one unwrapped line each."""
    console.print(request_panel(request, index=index, votes=votes))
    if config is not None:
        _, others = deciding_as(request, votes)
        also = f" ({', '.join(others)} may too: change --principal)" if others else ""
        console.print(f"answer with{also}:", style="dim")
        for command in answer_commands(request, config, votes):
            console.print(Text(f"  {command}", style="cyan"), soft_wrap=True)


def print_inbox(console: Console, page: InboxPage, *, as_json: bool, config: str) -> None:
    """`sayso inbox`: each open request's panel and commands, or one JSON object of them."""
    if as_json:
        from .._runtime import request_json  # the records' JSON (`_runtime._results`), only for --json

        shown = [request_json(r, votes=page.votes.get(r.request_id, ())) for r in page.requests]
        print(json.dumps({"requests": shown}, ensure_ascii=False))
        return
    if not page.requests:
        console.print("no open requests")
    for request in page.requests:
        print_request(console, request, config=config, votes=page.votes.get(request.request_id, ()))


def request_panel(
    request: Request, *, index: int | None = None, brief: bool = False, votes: Sequence[Vote] = ()
) -> Panel:
    """A request as a panel: what is asked, by whom, who decides it, and its id for `sayso decide`.

    `brief` leaves a question's words out, for a prompt that asks them right after; `votes` are
    the votes cast on a request that needs several approvals.
    """
    body: list[RenderableType] = []
    title: str
    if isinstance(request, ApprovalRequest):
        title = f"{_who(request)} wants to run [bold]{request.tool_name}[/bold]"
        body.extend(_approval_lines(request, votes))
    elif isinstance(request, InputRequest):
        title = f"{_who(request)} asks for input at [bold]{request.node}[/bold]"
        body.append(Text(request.message))
        if request.payload is not None:
            body.append(readable_payload(request.payload))
        body.append(Text(f"answer: {fields_summary(request.response_schema)}", style="italic"))
        if request.why:
            body.append(Text(request.why))
    elif isinstance(request, QuestionRequest):
        title = f"{_who(request)} asks"
        for q in () if brief else request.questions:
            body.append(Text(q.question, style="bold"))
            for n, choice in enumerate(q.choices, 1):
                body.append(Text(f"  {n}) {choice}"))
            if q.multiple:
                body.append(Text("  (several answers allowed)", style="dim"))
    elif isinstance(request, ElicitationRequest):
        title = f"{request.server or 'a check before ' + request.tool_name} asks ({_who(request)}, {request.tool_name})"
        body.extend(_elicitation_lines(request))
    else:
        assert isinstance(request, ClientToolRequest)
        title = f"{_who(request)} asks the client to run [bold]{request.tool_name}[/bold]"
        body.append(json_block(shown_args(request)))
        if request.description:
            body.append(Text(request.description, style="italic"))
    body.extend(routing_lines(request, votes))
    if request.expires_at is not None:
        body.append(Text(f"expires {datetime.fromtimestamp(request.expires_at, UTC):%Y-%m-%d %H:%M:%S} UTC"))
    body.append(Text(f"request {request.request_id}", style="dim"))
    prefix = f"[{index}] " if index is not None else ""
    return Panel(Group(*body), title=prefix + title, title_align="left", border_style="yellow")


def routing_lines(request: Request, votes: Sequence[Vote] = ()) -> list[Text]:
    """Who decides a routed request, and where its vote stands: `approvals: 1 of 2, waiting for sre`."""
    routing = request.routing
    if routing is None:
        return []
    names = ", ".join(routing.deciders(request.principal)) or "nobody but local mode's caller"
    lines = [Text(f"decided by: {', '.join(routing.named)} ({names})")]
    if not routing.self_approval and any(a.name == request.principal for a in routing.approvers):
        lines.append(Text(f"not by {request.principal}, who started the run (separation of duties)", style="dim"))
    if routing.approvals_required > 1:
        lines.append(
            Text(
                f"approvals: {quorum(routing, votes, starter=request.principal, proposed=request.args).text}",
                style="bold",
            )
        )
    return lines


def _approval_lines(request: ApprovalRequest, votes: Sequence[Vote]) -> list[RenderableType]:
    """An approval's arguments (those the votes are about), hint, tool source, subject, scopes and feedback asked."""
    lines: list[RenderableType] = [
        json_block(shown_standing_args(request, votes)),
        Text(request.hint, style="italic"),
        *([Text(request.why)] if request.why else []),
        *_tool_lines(request),
    ]
    if request.subject is not None:
        lines.append(Text(f"covers: {request.subject.label}"))
    if len(request.scopes) > 1:
        lines.append(Text(f"may be remembered: {', '.join(request.scopes)}"))
    if request.payload is not None:
        lines.append(json_block(request.payload))
    if request.response_schema is not None:
        lines.append(Text(f"send with an approval: {fields_summary(request.response_schema)}"))
    return lines


def readable_payload(payload: Any) -> RenderableType:
    """Data a workflow shows with its question, as a person reads it: fields as `name: value`, lists as items.

    A list of records with a name (an itinerary) reads `1. Name — description`; anything deeper or
    odder falls back to indented JSON, which is still exact.
    """
    lines = _readable(payload, 0)
    if lines is None or len(lines) > 60:
        return json_block(payload)
    return Text("\n".join(lines))


def _readable(value: Any, depth: int) -> list[str] | None:
    pad = "  " * depth
    if isinstance(value, str | int | float | bool) or value is None:
        return [f"{pad}{_scalar(value)}"]
    if depth > 2:
        return None
    if isinstance(value, list):
        out: list[str] = []
        for n, item in enumerate(value, 1):
            named = _named_item(item)
            if named is not None:
                out.append(f"{pad}{n}. {named}")
                continue
            inner = _readable(item, depth + 1)
            if inner is None:
                return None
            out.append(f"{pad}{n}. {inner[0].strip()}")
            out.extend(inner[1:])
        return out or [f"{pad}(none)"]
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            label = str(key).replace("_", " ")
            if isinstance(item, str | int | float | bool) or item is None:
                out.append(f"{pad}{label}: {_scalar(item)}")
                continue
            inner = _readable(item, depth + 1)
            if inner is None:
                return None
            out.append(f"{pad}{label}:")
            out.extend(inner)
        return out
    return None


def _named_item(item: Any) -> str | None:
    """`Name — description` for a record holding a name (or title) and at most a description besides."""
    if not isinstance(item, dict):
        return None
    name = item.get("name", item.get("title"))
    rest = set(item) - {"name", "title", "description"}
    if not isinstance(name, str) or rest:
        return None
    description = item.get("description")
    return f"{name} — {description}" if isinstance(description, str) and description else name


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "—" if value is None else str(value)


def json_block(value: Any) -> RenderableType:
    """Indented JSON wrapped at the panel's edge, so a long argument is shown whole.

    A person approves what they read: a value cut off where the terminal ends hides what they approve.
    """
    return Syntax(json.dumps(value, indent=2, ensure_ascii=False), "json", theme="ansi_dark", word_wrap=True)


def fields_summary(schema: JsonSchemaValue) -> str:
    """What an answer must hold, in words: `city (text, required), age (whole number)`."""
    root = schema
    schema = schema_type(schema)
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return _kind(schema, root)
    required = set(schema.get("required", []))
    return ", ".join(
        f"{name} ({_kind(schema_type(spec, root), root)}{', required' if name in required else ''})"
        for name, spec in properties.items()
    )


def _kind(schema: JsonSchemaValue, root: JsonSchemaValue) -> str:
    if "enum" in schema:
        return "one of " + " / ".join(map(str, schema["enum"]))
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_kind(schema_type(schema.get('items', {}), root), root)}"
    names = {"string": "text", "integer": "whole number", "number": "number", "boolean": "yes/no", "object": "fields"}
    return names.get(str(kind), "any JSON value")


def _tool_lines(request: ApprovalRequest) -> list[Text]:
    """What the tool's source (an MCP server) says about the tool: title, description, whether it destroys."""
    info = request.tool_info
    if info is None:
        return []
    lines = []
    about = ": ".join(part for part in (info.title, info.description) if part)
    if about:
        lines.append(Text(f"{info.source or 'tool'} · {about}", style="dim"))
    if info.destructive and not info.read_only:
        lines.append(Text("the tool's source says it may destroy data", style="red"))
    return lines


def _elicitation_lines(request: ElicitationRequest) -> list[Text]:
    """What a server asks: its message, then the page to visit or the form's fields."""
    lines = [Text(request.message, style="bold")]
    if request.mode == "url":
        lines.append(Text(f"visit: {request.url}", style="underline"))
        lines.append(Text("then say done (or decline, or cancel)", style="dim"))
    else:
        lines.extend(Text(f"  {line}") for line in form_fields(request.requested_schema or {}))
    return lines


def form_fields(schema: JsonSchemaValue) -> list[str]:
    """A form's fields as lines a person reads: name, type, whether required, choices and description."""
    required = set(schema.get("required", []))
    lines = []
    for name, field in (schema.get("properties") or {}).items():
        label = field.get("title") or name
        kind = "one of " + ", ".join(map(str, field["enum"])) if "enum" in field else field.get("type", "any")
        line = f"{label} ({name}: {kind}{', required' if name in required else ''})"
        if field.get("description"):
            line += f" — {field['description']}"
        lines.append(line)
    return lines


def example_content(schema: JsonSchemaValue) -> dict[str, Any]:
    """A filled-in example of a form's content, for the `sayso decide ... accept` command shown."""
    samples = {"integer": 1, "number": 1.0, "boolean": True}
    return {
        name: field["enum"][0] if field.get("enum") else samples.get(field.get("type", ""), f"your {name}")
        for name, field in (schema.get("properties") or {}).items()
    }


def print_result(console: Console, result: RunResult, *, config: str | None = None) -> None:
    """A run result for people: the answer, or what the run waits on and how to decide it.

    Args:
        console: where to print.
        result: the run's result.
        config: the config path the command was given; when set, each request shows the
            exact `sayso decide` commands that answer it.
    """
    if result.status == "completed":
        # The agent's words are printed as they are: `[b]` in them is text, not a style to apply.
        console.print(
            Panel(Text(result.output or ""), title=f"{result.agent}", title_align="left", border_style="green")
        )
    elif result.status == "paused":
        console.print(f"[yellow]paused[/yellow]: run {result.run_id} waits on {len(result.requests)} request(s)")
        for n, request in enumerate(result.requests, 1):
            print_request(console, request, index=n, config=config, votes=result.votes.get(request.request_id, ()))
    elif result.status == "failed":
        console.print(Text.assemble(("failed", "red"), f": {result.error}"))
    else:
        console.print(f"run {result.run_id} is {result.status}")
    console.print(f"[dim]thread {result.thread_id} · run {result.run_id}[/dim]")


def greeting(runtime: Sayso, name: str) -> str:
    """Who `sayso chat` says the person talks to: a workflow, or an agent and its model."""
    from .._engine.scripted import ScriptedModel  # the engine: only a chat, which runs agents, greets

    if name in runtime.config.workflows:
        return f"Running the workflow [bold]{name}[/bold]: your message is its input."
    model = runtime.agent_model(name)
    if isinstance(model, ScriptedModel):
        about = f"{model.model_name} [dim](a scripted demo model, not an LLM)[/dim]"
    else:
        about = model if isinstance(model, str) else model.model_name
    return f"Chatting with [bold]{name}[/bold] on {about}."


def grants_table(grants: Sequence[Grant]) -> Table:
    """`sayso grants list`: the ids are what `grants revoke` takes, whole on one line however narrow the terminal."""
    table = Table()
    table.add_column("grant", no_wrap=True, min_width=max((len(g.grant_id) for g in grants), default=0))
    for name in ("tool", "covers", "scope", "principal", "agent", "thread"):
        table.add_column(name, overflow="fold")
    for g in grants:
        agent = g.agent or "none"
        table.add_row(g.grant_id, g.tool, g.subject_label, g.scope, g.principal, agent, g.thread_id or "any")
    return table


def audit_table(records: Sequence[AuditRecord]) -> Table:
    """`sayso audit list`: each cell is text, whatever a record (or a hand edit of the table) holds there."""
    from .._core.audit_events import event_time
    from .._core.decisions import VIA_LABELS

    table = Table("#", "event", "tool", "decision", "by", "principal", "via", "when (UTC)")
    for r in records:
        b = r.body
        at = event_time(b)
        table.add_row(
            str(r.seq),
            *(str(b.get(name) or "") for name in ("event", "tool_name", "decision", "by", "principal")),
            VIA_LABELS.get(str(b.get("via")), ""),
            f"{datetime.fromtimestamp(at, UTC):%Y-%m-%d %H:%M:%S}" if at is not None else "",
        )
    return table
