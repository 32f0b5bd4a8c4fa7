"""The `sayso` command: chat, run, decide, resume and inbox, each a thin call into the runtime."""

from __future__ import annotations

import copy
import errno
import json
import logging
import os
import shlex
import sys
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.main import get_command_name
from typer.models import CommandInfo

from ..exceptions import ConfigError, SaysoError
from ._command import Command as _Command
from ._command import port_number, sweep_seconds
from ._console import SafeConsole
from ._exits import CANNOT_SERVE, FAILED, WRONG
from ._open import check_id, fail
from ._open import with_app as _with_app
from ._open import with_inbox as _with_inbox
from ._startup import collector_paused as _collector_paused

if TYPE_CHECKING:
    from .._core.decisions import Decision
    from .._core.requests import Request
    from .._runtime import DecideResult, Inbox, InboxPage, RunResult, Sayso

# Each command imports what it uses inside itself: `sayso --help` loads typer and rich, not the
# runtime, pydantic-ai, SQLAlchemy or the web stack (tests/cli/test_startup.py keeps it so).

app = typer.Typer(
    name="sayso",
    help="Agents that pause for a person and carry on exactly where they stopped.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
console = SafeConsole()
errors = SafeConsole(stderr=True)

T = TypeVar("T")

ConfigArg = Annotated[str, typer.Argument(help="Path to sayso.yaml.", metavar="CONFIG", show_default=False)]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of panels.")]
INBOX_PAGE = 100
"""How many open requests `sayso inbox` reads from the store at a time; it lists them all, oldest first."""

PrincipalOpt = Annotated[
    str, typer.Option("--principal", help="Who is acting.", envvar="SAYSO_PRINCIPAL", metavar="NAME")
]
InboxOf = Annotated[
    str | None,
    typer.Option(help="Only what this principal may decide.", envvar="SAYSO_PRINCIPAL", metavar="NAME"),
]
"""`--principal` of a command that reads as the operator without it; `SAYSO_PRINCIPAL` counts as for `PrincipalOpt`."""
AgentOpt = Annotated[str | None, typer.Option(help="Agent to talk to (default: the entry agent).", metavar="NAME")]
ThreadOpt = Annotated[str | None, typer.Option(help="Continue this thread.", metavar="THREAD_ID")]


def _version(show: bool) -> None:
    if show:
        from importlib.metadata import PackageNotFoundError, version  # here: it costs every command a lot

        try:
            print(f"sayso {version('sayso')}")
        except PackageNotFoundError:  # pragma: no cover  # run from a source tree that was never installed
            print("sayso (not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: Annotated[
        bool, typer.Option("--version", help="Print sayso's version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Agents that pause for a person and carry on exactly where they stopped."""


def _shown(as_json: bool) -> tuple[Console | None, Console]:
    """Where a command shows results (none with `--json`: its one object is the end) and where it says a wait."""
    return (None if as_json else console, errors)


def _print(result: RunResult, as_json: bool, *, config: str | None = None) -> None:
    """Print a run's result; a failed run exits FAILED, so scripts notice."""
    from .._runtime import run_json
    from ._render import print_result

    if as_json:
        print(json.dumps(run_json(result), ensure_ascii=False))
    else:
        print_result(console, result, config=config)
    if result.status == "failed":
        raise typer.Exit(FAILED)


@app.command(cls=_Command)
def chat(
    config: ConfigArg,
    agent: AgentOpt = None,
    thread: ThreadOpt = None,
    principal: PrincipalOpt = "local",
) -> None:
    """Chat with an agent, answering its requests at the prompt."""
    check_id("--thread", thread, what="a thread id", example="thr_")
    from ._chat import chat_loop
    from ._interrupts import busy_explained

    def work(rt: Sayso) -> Awaitable[None]:
        chatting = chat_loop(rt, console, agent=agent, thread_id=thread, principal=principal, config=config)
        return busy_explained(rt, chatting, config)

    _with_app(config, work, principal=principal)


@app.command(cls=_Command)
def run(
    config: ConfigArg,
    message: Annotated[str, typer.Argument(help="What you say to the agent.", metavar="MESSAGE")],
    agent: AgentOpt = None,
    thread: ThreadOpt = None,
    principal: PrincipalOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Send one message, print where the run stands (completed or paused), and exit (a live form: wait for it)."""
    check_id("--thread", thread, what="a thread id", example="thr_", as_json=as_json)
    from ._holding import run_holding
    from ._interrupts import Where, interruptible

    def running(rt: Sayso, where: Where) -> Awaitable[RunResult]:
        to = _shown(as_json)
        return run_holding(
            rt, message, agent=agent, thread_id=thread, principal=principal, config=config, to=to, on_start=where.note
        )

    async def work(rt: Sayso) -> RunResult:
        return await interruptible(rt, lambda where: running(rt, where), config=config, as_json=as_json)

    _print(_with_app(config, work, as_json=as_json, principal=principal), as_json, config=config)


@app.command(cls=_Command)
def decide(
    config: ConfigArg,
    request_id: Annotated[str, typer.Argument(help="The request to decide.", metavar="REQUEST_ID")],
    action: Annotated[
        str,
        typer.Argument(
            help="approve, reject, skip, answer, result, error; for a server's form or page: accept, done, "
            "decline, cancel.",
            metavar="ACTION",
        ),
    ],
    values: Annotated[
        list[str] | None,
        typer.Argument(
            help="answer: one answer per question, or a workflow's input (JSON; plain text where it asks for "
            "text); approve: the feedback the tool asked for (JSON); result: the value (JSON or text); "
            "error: the message; accept: the form's content (a JSON object).",
            metavar="VALUE",
        ),
    ] = None,
    reason: Annotated[str | None, typer.Option(help="Why you reject or skip.", metavar="TEXT")] = None,
    args: Annotated[
        str | None, typer.Option("--args", help="Approve with these arguments instead (JSON).", metavar="JSON")
    ] = None,
    scope: Annotated[str, typer.Option(help="Remember an approval: once, thread or always.", metavar="SCOPE")] = "once",
    answers: Annotated[
        str | None,
        typer.Option(help='All answers as JSON, one list per question: [["a","b"],["c"]].', metavar="JSON"),
    ] = None,
    principal: PrincipalOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Decide one request; when it was the last open one, the run resumes and its result is printed."""
    check_id("REQUEST_ID", request_id, what="a request id", example="req_", as_json=as_json)
    with _collector_paused():
        from ._decisions import check_action_fits, parse_decision
        from ._holding import held_to_the_end
        from ._interrupts import Where, interruptible
        from ._interrupts import deciding as decision_work

    def parsed(request: Request | None = None) -> Decision:
        try:
            return parse_decision(
                action, values or [], reason=reason, args=args, scope=scope, answers=answers, request=request
            )
        except typer.BadParameter as exc:
            if not as_json:
                raise
            fail("BadParameter", exc.message, code=WRONG, as_json=True)

    # What `answer` and `approve` take depends on the request: its kind, the schema it asks for.
    needs_request = action in ("answer", "provide") or (action == "approve" and bool(values))
    decision = None if needs_request else parsed()

    async def deciding(rt: Sayso, where: Where) -> DecideResult:
        request = (await rt.request(request_id, principal=principal)).request
        check_action_fits(action, request)  # said in this command's words, not the runtime's kinds of decision
        chosen = decision if decision is not None else parsed(request)
        decided = await decision_work(rt, request, chosen, principal)(where)
        # The run it resumed may have run into a server's form on a live call, which this process holds.
        held = await held_to_the_end(rt, decided.run, principal=principal, config=config, to=_shown(as_json))
        return replace(decided, run=held)

    async def work(rt: Sayso) -> DecideResult:
        return await interruptible(rt, lambda where: deciding(rt, where), config=config, as_json=as_json)

    outcome = _with_app(config, work, as_json=as_json, principal=principal)
    if not as_json and not outcome.recorded:
        console.print("[dim]that decision was already recorded; nothing changed[/dim]")
    standing = outcome.quorum
    if not as_json and standing is not None:
        # Where the vote stands, while it goes on or once it is won; a rejection ended it (the run says so).
        still_open = any(r.request_id == request_id for r in outcome.run.requests)
        if still_open or len(standing.approved_by) >= standing.required:
            console.print(f"approvals: {standing.text}")
    _print(outcome.run, as_json, config=config)


@app.command(cls=_Command)
def resume(
    config: ConfigArg,
    run_id: Annotated[str, typer.Argument(help="The run to resume.", metavar="RUN_ID")],
    force: Annotated[bool, typer.Option(help="Resume even if requests are open; they count as skipped.")] = True,
    who: Annotated[
        str | None,
        typer.Option("--principal", help="Who forces it (else local).", envvar="SAYSO_PRINCIPAL", metavar="NAME"),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Resume a paused run now (open requests count as skipped by you), or carry on a run whose process died."""
    check_id("RUN_ID", run_id, what="a run id", example="run_", as_json=as_json)
    from ._holding import held_to_the_end
    from ._interrupts import Where, interruptible

    async def resuming(rt: Sayso, where: Where) -> RunResult:
        where.note(run_id, (await rt.run_record(run_id, principal=who)).thread_id)
        resumed = await rt.resume(run_id, force=force, principal=who, via="cli")
        return await held_to_the_end(rt, resumed, principal=who or "local", config=config, to=_shown(as_json))

    async def work(rt: Sayso) -> RunResult:
        return await interruptible(rt, lambda where: resuming(rt, where), config=config, as_json=as_json)

    _print(_with_app(config, work, as_json=as_json, principal=who), as_json, config=config)


@app.command(cls=_Command)
def inbox(config: ConfigArg, principal: InboxOf = None, as_json: JsonOpt = False) -> None:
    """List every open request across threads, oldest first (with --principal: what that person may decide)."""
    with _collector_paused():
        from .._core.access import LOCAL
        from ._render import print_inbox

    async def work(rt: Inbox) -> InboxPage:
        # The command line reads the store as its operator (every thread's requests, as in local mode),
        # or as the principal it names; page after page, as it promises every open request.
        who = LOCAL if principal is None else principal
        page = await rt.inbox(principal=who, limit=INBOX_PAGE)
        requests, votes = list(page.requests), dict(page.votes)
        while page.next_cursor is not None:
            page = await rt.inbox(principal=who, limit=INBOX_PAGE, cursor=page.next_cursor)
            requests.extend(page.requests)
            votes.update(page.votes)
        return replace(page, requests=requests, votes=votes)

    listed = _with_inbox(config, work, as_json=as_json, principal=principal)
    print_inbox(console, listed, as_json=as_json, config=config)


@app.command(cls=_Command)
def serve(
    config: ConfigArg,
    host: Annotated[
        str,
        typer.Option(
            help="Address to bind (without principals: a loopback name only, 127.0.0.1, localhost or ::1).",
            metavar="ADDRESS",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.", metavar="PORT", callback=port_number)] = 8000,
    expire_every: Annotated[
        float,
        typer.Option(
            help="Seconds between sweeps that close runs whose requests expired and prune webhook events past "
            "their retention; 0 turns them off.",
            metavar="SECONDS",
            callback=sweep_seconds,
        ),
    ] = 30.0,
    recover_every: Annotated[
        float,
        typer.Option(
            help="Seconds between sweeps that carry on runs whose process died; 0 turns it off.",
            metavar="SECONDS",
            callback=sweep_seconds,
        ),
    ] = 5.0,
    grpc_port: Annotated[
        int | None,
        typer.Option(
            help="Also serve A2A over gRPC on this port (lf.a2a.v1.A2AService, each agent named in the call's "
            "tenant as NAMESPACE/NAME). Needs the grpc extra.",
            metavar="PORT",
            callback=port_number,
        ),
    ] = None,
) -> None:
    """Serve the REST API, the web UI and the A2A and AG-UI endpoints."""
    from .._serve import serve as run_server

    try:
        run_server(
            config,
            host,
            port,
            expire_every_seconds=expire_every or None,
            recover_every_seconds=recover_every or None,
            grpc_port=grpc_port,
        )
    except ConfigError as exc:
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(WRONG) from None
    except OSError as exc:  # the port is taken (checked before anything starts)
        errors.print(f"[red]error:[/red] {escape(exc.strerror or str(exc))}", soft_wrap=True)
        raise typer.Exit(CANNOT_SERVE) from None
    except SaysoError as exc:  # the runtime could not start: its store cannot be opened, say
        errors.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(CANNOT_SERVE) from None
    except SystemExit as exc:  # uvicorn's own start-up failure (say, the port taken in between)
        raise typer.Exit(CANNOT_SERVE if exc.code else 0) from None


@app.command("init", cls=_Command)
def init(
    folder: Annotated[str, typer.Argument(help="Where to write it (default: here).", metavar="DIR")] = ".",
) -> None:
    """Write a starter project that runs with no API key: a config, a tool that needs approval, a script."""
    from rich.text import Text

    folder = folder or "."  # `sayso init ""`: here, and said so

    from ._pasted import config_word, sayso_command
    from ._starter import write_starter

    try:
        write_starter(Path(folder))
    except FileExistsError as exc:
        errors.print(f"[red]error:[/red] already there, so nothing was written: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(WRONG) from None
    except OSError as exc:  # a folder that cannot be made or written: no such parent, no permission, read-only
        where = escape(str(exc.filename or folder))
        said = f"[red]error:[/red] cannot write the starter in {where}: {escape(exc.strerror or str(exc))}"
        errors.print(said, soft_wrap=True, highlight=False)
        raise typer.Exit(WRONG) from None
    config = config_word(str(Path(folder) / "sayso.yaml"))  # absolute: the commands run pasted in any folder
    run = shlex.quote("refund A-100 25")
    console.print(f"wrote sayso.yaml, desk_tools.py and script.yaml in {escape(folder)}; try:", highlight=False)
    for line in (f"{sayso_command()} run {config} {run}", f"{sayso_command()} chat {config}"):
        console.print(Text(f"  {line}", style="cyan"), soft_wrap=True)
    console.print(Text(f"  {sayso_command()} serve {config}", style="cyan"), soft_wrap=True)


@app.command(cls=_Command)
def check(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Check a config the way loading it does, and that its store answers, without running anything; exits 2 on errors.

    Each problem names the file, the line and the fix. Errors stop the config from loading (an
    approval rule that names no tool, a model that cannot be reached), its store from opening (it
    does not answer, or its SQLite file cannot be written) or, with `engine: temporal`, its cluster
    from taking runs (it does not answer, or has no such namespace); warnings and notes do not (no
    worker polls the task queue yet).
    """
    from ._checking import check_config_file

    if not check_config_file(config, as_json=as_json, out=console, err=errors):
        raise typer.Exit(WRONG)


@app.command(cls=_Command)
def expire(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Close paused runs whose open requests have all expired; each agent answers with what it knows."""
    from .._runtime import run_json
    from ._interrupts import interruptible
    from ._render import print_result

    async def work(rt: Sayso) -> list[RunResult]:
        return await interruptible(rt, lambda where: rt.expire(on_run=where.note), config=config, as_json=as_json)

    results = _with_app(config, work, as_json=as_json)
    if as_json:
        print(json.dumps({"runs": [run_json(r) for r in results]}, ensure_ascii=False))
        return
    console.print(f"{len(results)} run(s) closed by expiry")
    for result in results:
        print_result(console, result, config=config)


@app.command(cls=_Command)
def recover(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Carry on runs whose process died: an approved call cut off mid-run is outcome unknown, never run twice.

    A call cut off that needed no approval runs again, as does one of a tool declared idempotent (an
    MCP tool its server marks read-only or idempotent). `sayso serve` does this at start and every few
    seconds; this is for stores no server runs on.
    """
    from .._runtime import run_json
    from ._interrupts import interruptible
    from ._render import print_result

    async def work(rt: Sayso) -> list[RunResult]:
        return await interruptible(rt, lambda where: rt.recover(on_run=where.note), config=config, as_json=as_json)

    results = _with_app(config, work, as_json=as_json)
    if as_json:
        print(json.dumps({"runs": [run_json(r) for r in results]}, ensure_ascii=False))
        return
    console.print(f"{len(results)} run(s) carried on")
    for result in results:
        print_result(console, result, config=config)


def app_for(args: Sequence[str]) -> typer.Typer:
    """The app with only the command `args` name, so that a command does not build every other one first.

    typer builds the whole command tree before it dispatches, reading the signature and evaluating
    the annotations of every command's function: 16–26 ms of each `sayso ...` against 2–3 ms for
    one command (measured in fresh processes). Anything else gets the whole app: no arguments, an
    option first (`sayso --help` lists every command), a name no command has (answered with
    click's `No such command` as before).
    """
    if not args or args[0].startswith("-"):
        return app
    commands = [c for c in app.registered_commands if _command_name(c) == args[0]]
    groups = [g for g in app.registered_groups if g.name == args[0]]
    if not commands and not groups:
        return app
    only = copy.copy(app)  # its settings and callback (`--version`): still a group, `sayso inbox` read as before
    only.registered_commands, only.registered_groups = commands, groups
    return only


def _command_name(command: CommandInfo) -> str | None:
    if command.name is not None:
        return command.name
    return None if command.callback is None else get_command_name(command.callback.__name__)


_WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
"""How writing the output fails where it goes (a full disk, a quota, a file too large, a device error).

A closed pipe (`sayso inbox CONFIG | head -1`) is click's: it stops quietly, exit 1.
"""


def main() -> None:
    """Entry point of the `sayso` console script."""
    try:
        try:
            app_for(sys.argv[1:])(prog_name="sayso")
        finally:
            sys.stdout.flush()  # here, so that a write that fails is said, not a traceback (or an exit 120)
    except OSError as exc:
        if exc.errno not in (*_WRITE_ERRORS, errno.EPIPE):
            raise
        sys.stdout = open(os.devnull, "w")  # what is still buffered is dropped, not tried again at exit
        if exc.errno != errno.EPIPE:  # whoever closed the pipe wanted no more
            print(f"error: cannot write the output: {exc.strerror}", file=sys.stderr)
        raise SystemExit(FAILED) from None
    except SystemExit as done:
        if "temporalio.bridge.temporal_sdk_bridge" not in sys.modules:
            raise
        # A command that spoke to Temporal (a front or a worker of `engine: temporal`) ends here, its
        # work done: the SDK's Rust threads outlive it and can abort the interpreter's finalization
        # (SIGABRT instead of the command's exit code, temporalio/sdk-python#300), so it is skipped.
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(done.code if isinstance(done.code, int) else 0 if done.code is None else 1)
