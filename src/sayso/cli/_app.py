"""The `sayso` command: chat, run, decide, resume and inbox, each a thin call into the runtime."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Annotated, Any, TypeVar

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .._core.access import LOCAL
from .._core.audit import AuditProblem
from .._core.decisions import Answer, Approve, ClientError, ClientResult, Decision, Reject, Skip
from .._core.requests import Request, Scope
from .._results import DecideResult, RunResult, request_json, run_json
from .._runtime import Sayso
from ..exceptions import ConfigError, NotFound, SaysoError
from ._chat import chat_loop
from ._render import print_result, request_panel

app = typer.Typer(
    name="sayso",
    help="Agents that pause for a person and carry on exactly where they stopped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
errors = Console(stderr=True)

T = TypeVar("T")

ConfigArg = Annotated[str, typer.Argument(help="Path to sayso.yaml.", metavar="CONFIG")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of panels.")]
INBOX_LIMIT = 100
"""How many open requests `sayso inbox` lists, oldest first."""

PrincipalOpt = Annotated[str, typer.Option("--principal", help="Who is acting.", envvar="SAYSO_PRINCIPAL")]


def _with_app(config: str, work: Callable[[Sayso], Awaitable[T]], *, as_json: bool = False) -> T:
    """Open the runtime, do the work, and turn sayso's errors into a message and an exit code."""

    async def main() -> T:
        async with Sayso.from_yaml(config) as runtime:
            return await work(runtime)

    try:
        return anyio.run(main)
    except SaysoError as exc:
        code = 2 if isinstance(exc, ConfigError) else 3 if isinstance(exc, NotFound) else 1
        if as_json:
            print(json.dumps({"error": {"type": type(exc).__name__, "message": str(exc)}}))
        else:
            errors.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(code) from None


def _print(result: RunResult, as_json: bool) -> None:
    if as_json:
        print(json.dumps(run_json(result), ensure_ascii=False))
    else:
        print_result(console, result)


@app.command()
def chat(
    config: ConfigArg,
    agent: Annotated[str | None, typer.Option(help="Agent to talk to (default: the entry agent).")] = None,
    thread: Annotated[str | None, typer.Option(help="Continue this thread.")] = None,
    principal: PrincipalOpt = "local",
) -> None:
    """Chat with an agent, answering its requests at the prompt."""
    _with_app(config, lambda rt: chat_loop(rt, console, agent=agent, thread_id=thread, principal=principal))


@app.command()
def run(
    config: ConfigArg,
    message: Annotated[str, typer.Argument(help="What you say to the agent.")],
    agent: Annotated[str | None, typer.Option(help="Agent to talk to (default: the entry agent).")] = None,
    thread: Annotated[str | None, typer.Option(help="Continue this thread.")] = None,
    principal: PrincipalOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Send one message, print where the run stands (completed or paused), and exit."""

    async def work(rt: Sayso) -> RunResult:
        if as_json:
            return await rt.run(message, agent=agent, thread_id=thread, principal=principal)
        with console.status("working…"):
            return await rt.run(message, agent=agent, thread_id=thread, principal=principal)

    _print(_with_app(config, work, as_json=as_json), as_json)


@app.command()
def decide(
    config: ConfigArg,
    request_id: Annotated[str, typer.Argument(help="The request to decide.")],
    action: Annotated[str, typer.Argument(help="approve, reject, skip, answer, result or error.")],
    values: Annotated[
        list[str] | None,
        typer.Argument(help="answer: one answer per question; result: the value (JSON or text); error: the message."),
    ] = None,
    reason: Annotated[str | None, typer.Option(help="Why you reject or skip.")] = None,
    args: Annotated[str | None, typer.Option("--args", help="Approve with these arguments instead (JSON).")] = None,
    scope: Annotated[str, typer.Option(help="Remember an approval: once, thread or always.")] = "once",
    answers: Annotated[
        str | None, typer.Option(help='All answers as JSON, one list per question: [["a","b"],["c"]].')
    ] = None,
    principal: PrincipalOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Decide one request; when it was the last open one, the run resumes and its result is printed."""
    decision = parse_decision(action, values or [], reason=reason, args=args, scope=scope, answers=answers)

    async def work(rt: Sayso) -> DecideResult:
        return await rt.decide(request_id, decision, principal=principal)

    outcome = _with_app(config, work, as_json=as_json)
    if not as_json and not outcome.recorded:
        console.print("[dim]that decision was already recorded; nothing changed[/dim]")
    _print(outcome.run, as_json)


@app.command()
def resume(
    config: ConfigArg,
    run_id: Annotated[str, typer.Argument(help="The run to resume.")],
    force: Annotated[bool, typer.Option(help="Resume even if requests are open; they count as skipped.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Resume a paused run now (open requests count as skipped), or carry on a run whose process died."""
    _print(_with_app(config, lambda rt: rt.resume(run_id, force=force), as_json=as_json), as_json)


@app.command()
def inbox(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """List every open request across threads, oldest first."""

    async def work(rt: Sayso) -> list[Request]:
        # The command line reads the store as its operator: every thread's requests, as in local mode.
        return (await rt.inbox(principal=LOCAL, limit=INBOX_LIMIT)).requests

    requests = _with_app(config, work, as_json=as_json)
    if as_json:
        print(json.dumps({"requests": [request_json(r) for r in requests]}, ensure_ascii=False))
        return
    if not requests:
        console.print("no open requests")
    for request in requests:
        console.print(request_panel(request))


@app.command()
def serve(
    config: ConfigArg,
    host: Annotated[str, typer.Option(help="Address to bind (127.0.0.1 only without principals).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    expire_every: Annotated[
        float, typer.Option(help="Seconds between sweeps that close runs whose requests expired; 0 turns it off.")
    ] = 30.0,
) -> None:
    """Serve the REST API, the web UI and the A2A and AG-UI endpoints."""
    from ..server import serve as run_server

    try:
        run_server(config, host, port, expire_every_seconds=expire_every or None)
    except ConfigError as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None


@app.command()
def expire(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Close paused runs whose open requests have all expired; each agent answers with what it knows."""
    results = _with_app(config, lambda rt: rt.expire(), as_json=as_json)
    if as_json:
        print(json.dumps({"runs": [run_json(r) for r in results]}, ensure_ascii=False))
        return
    console.print(f"{len(results)} run(s) closed by expiry")
    for result in results:
        print_result(console, result)


grants_app = typer.Typer(help="Remembered approvals: list and revoke.", no_args_is_help=True)
audit_app = typer.Typer(help="The hash-chained audit log: list and verify.", no_args_is_help=True)
app.add_typer(grants_app, name="grants")
app.add_typer(audit_app, name="audit")


@grants_app.command("list")
def grants_list(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """List the active remembered approvals."""
    grants = _with_app(config, lambda rt: rt.grants(principal=LOCAL), as_json=as_json)
    if as_json:
        print(json.dumps({"grants": [asdict(g) for g in grants]}, ensure_ascii=False))
        return
    table = Table("grant", "tool", "covers", "scope", "principal", "thread")
    for g in grants:
        table.add_row(g.grant_id, g.tool, g.subject_label, g.scope, g.principal, g.thread_id or "any")
    console.print(table if grants else "no active grants")


@grants_app.command("revoke")
def grants_revoke(
    config: ConfigArg, grant_id: str, principal: PrincipalOpt = "local", as_json: JsonOpt = False
) -> None:
    """Revoke a remembered approval; the next call it covered asks again."""
    grant = _with_app(config, lambda rt: rt.revoke_grant(grant_id, principal=principal), as_json=as_json)
    if as_json:
        print(json.dumps({"revoked": asdict(grant)}, ensure_ascii=False))
    else:
        console.print(f"revoked {grant.grant_id} ({grant.tool} on {grant.subject_label})")


@audit_app.command("list")
def audit_list(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Print every audit record, oldest first."""
    records = _with_app(config, lambda rt: rt.audit_log(), as_json=as_json)
    if as_json:
        print(json.dumps({"records": [asdict(r) for r in records]}, ensure_ascii=False))
        return
    table = Table("#", "event", "tool", "decision", "by", "principal")
    for r in records:
        b = r.body
        table.add_row(
            str(r.seq),
            b.get("event", ""),
            b.get("tool_name", ""),
            b.get("decision", ""),
            b.get("by", ""),
            str(b.get("principal") or ""),
        )
    console.print(table)


@audit_app.command("verify")
def audit_verify(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Check the audit chain; exits 1 and names the first bad record when it was tampered with."""

    async def work(rt: Sayso) -> tuple[int, AuditProblem | None]:
        return await rt.audit_count(), await rt.verify_audit()

    count, problem = _with_app(config, work, as_json=as_json)
    if as_json:
        print(json.dumps({"records": count, "ok": problem is None, "problem": asdict(problem) if problem else None}))
    elif problem is None:
        console.print(f"audit log intact: {count} record(s)")
    else:
        errors.print(f"[red]audit log tampered:[/red] {escape(problem.problem)}", soft_wrap=True)
    if problem is not None:
        raise typer.Exit(1)


def parse_decision(
    action: str, values: list[str], *, reason: str | None, args: str | None, scope: str, answers: str | None
) -> Decision:
    """Turn the command line's words into a decision, or stop with a message naming the problem."""
    if action == "approve":
        if scope not in ("once", "thread", "always"):
            raise typer.BadParameter(f"--scope must be once, thread or always, not {scope!r}")
        edited = _json_option("--args", args) if args is not None else None
        if edited is not None and not isinstance(edited, dict):
            raise typer.BadParameter("--args must be a JSON object of arguments")
        checked_scope: Scope = scope  # type: ignore[assignment]  # narrowed by the membership test above
        return Approve(scope=checked_scope, edited_args=edited)
    if action == "reject":
        return Reject(reason=reason or (" ".join(values) or None))
    if action == "skip":
        return Skip(reason=reason or (" ".join(values) or None))
    if action == "answer":
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
    raise typer.BadParameter(f"unknown action {action!r}; use approve, reject, skip, answer, result or error")


def _json_option(name: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise typer.BadParameter(f"{name} is not valid JSON: {exc}") from None


def main() -> None:
    """Entry point of the `sayso` console script."""
    app(prog_name="sayso")
