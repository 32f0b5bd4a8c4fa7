"""`sayso chat`: a conversation in the terminal that answers every kind of request at the prompt."""

from __future__ import annotations

import contextlib
import json
import shlex
from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from .._core.access import LOCAL_NAME, may_message, refusal
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
)
from .._core.requests import (
    ApprovalRequest,
    ClientToolRequest,
    ElicitationRequest,
    InputRequest,
    QuestionRequest,
    Request,
    Scope,
    is_remote_call,
    shown_args,
)
from .._core.starting import check_agent
from .._core.votes import Vote, quorum
from .._runtime import RunResult, Sayso
from ..exceptions import (
    AgentNotFound,
    AlreadyDecided,
    CallEnded,
    DecisionRefused,
    InvalidInput,
    NotAllowed,
    RequestExpired,
    ThreadNotFound,
    TooLarge,
)
from ._fill import NEW, SKIP, NewMessage, Skipped, fill, fill_form
from ._holding import Cancelled, ask_held, is_held, say_held
from ._interrupts import Where, deciding, interruptible
from ._pasted import config_word, sayso_command
from ._prompt import read_line
from ._render import (
    greeting,
    print_result,
    request_panel,
)


async def chat_loop(
    runtime: Sayso,
    console: Console,
    *,
    agent: str | None,
    thread_id: str | None,
    principal: str,
    config: str,
) -> None:
    """Read messages until `exit`, end of input (Ctrl-D) or Ctrl-C; pause for every request the agent raises.

    However the person leaves, the last lines say which requests stay open and the command that
    comes back to this conversation. Ctrl-C while the agent works stops it as it stops `sayso run`
    (`_interrupts`): exit 130, one line naming the run it left and how to carry it on.
    """
    name = agent or runtime.config.entry_agent
    if thread_id is not None:
        with contextlib.suppress(ThreadNotFound):  # not found: a new thread of that id, the agent named
            thread = await runtime.thread(thread_id, principal=principal)
            check_agent(thread, agent)  # a thread keeps its agent: another --agent is refused, as `sayso run` does
            name = thread.agent
    console.print(greeting(runtime, name))
    console.print(
        "[dim]Type a message, or 'exit' (or Ctrl-D, Ctrl-C) to leave; the conversation is saved and can be "
        "resumed.[/dim]"
    )
    result = await _paused_on_thread(runtime, thread_id, principal) if thread_id else None
    try:
        thread_id = await _converse(runtime, console, name, thread_id, result, principal, config)
    except _Left as left:
        thread_id = left.thread_id
        console.print()  # past the prompt the person left at
    await _goodbye(runtime, console, thread_id, principal, config)


class _Left(Exception):
    """The person pressed Ctrl-C or Ctrl-D at a prompt; the conversation ends where it stands."""

    def __init__(self, thread_id: str | None) -> None:
        self.thread_id = thread_id
        super().__init__(thread_id)


async def _goodbye(runtime: Sayso, console: Console, thread_id: str | None, principal: str, config: str) -> None:
    """What stays open on the thread, and how to come back to it."""
    if thread_id is None:
        return
    paused = await _paused_on_thread(runtime, thread_id, principal)
    for request in paused.requests if paused is not None and paused.status == "paused" else []:
        if is_held(request):
            # Nobody else can hand its answer back: leaving closes it (`Sayso` closes what it holds).
            console.print(f"request {request.request_id} closes as cancelled: this chat held its call", soft_wrap=True)
            continue
        console.print(f"request {request.request_id} stays open: {_what(request)}", soft_wrap=True)
    back = f"{sayso_command()} chat {config_word(config)} --thread {thread_id}"
    if principal != LOCAL_NAME:  # without it the command acts as `local`, as a printed `decide` would
        back += f" --principal {shlex.quote(principal)}"
    console.print(f"thread {thread_id}; come back with: {back}", soft_wrap=True, highlight=False)


def _what(request: Request) -> str:
    if isinstance(request, ApprovalRequest):
        return f"{request.agent_path} wants to run {request.tool_name}"
    if isinstance(request, InputRequest):
        return f"{request.agent_path} asks for input at {request.node}"
    return f"{request.agent_path} asks ({request.kind})"


async def _converse(
    runtime: Sayso,
    console: Console,
    name: str,
    thread_id: str | None,
    result: RunResult | None,
    principal: str,
    config: str,
) -> str | None:
    pending: str | None = None
    while True:
        if result is not None and result.status == "paused":
            try:
                result, answered = await _answer_all(runtime, console, result, principal, config)
            except (EOFError, KeyboardInterrupt):
                raise _Left(result.thread_id) from None
            except NewMessage as new:
                pending = new.text
            else:
                if result.status != "paused":
                    print_result(console, result)
                elif not answered:
                    _nothing_to_decide(runtime, console, result, principal)
                    result = None  # what is open waits for others: the person writes or leaves
                continue
        if pending is None:
            try:
                text = read_line(console, "[bold cyan]you>[/bold cyan] ").strip()
            except (EOFError, KeyboardInterrupt):
                raise _Left(thread_id) from None
            if text in ("exit", "quit"):
                return thread_id
            if not text:
                continue
        else:
            text, pending = pending, None
        sent = await _send(runtime, console, text, agent=name, thread_id=thread_id, principal=principal, config=config)
        if sent is None:
            continue  # refused before anything was recorded: a request it would have skipped stays open, asked again
        result = sent
        thread_id = result.thread_id
        if result.status != "paused":
            print_result(console, result)


async def _paused_on_thread(runtime: Sayso, thread_id: str, principal: str) -> RunResult | None:
    """The run a thread waits on, to answer first; `None` for a new thread (or one the principal may not see)."""
    try:
        thread = await runtime.thread(thread_id, principal=principal)
    except ThreadNotFound:
        return None
    if thread.active_run_id is None:
        return None
    return await runtime.result(thread.active_run_id, principal=principal)


async def _answer_all(
    runtime: Sayso, console: Console, result: RunResult, principal: str, config: str
) -> tuple[RunResult, bool]:
    """Ask about each open request in turn (a form this chat holds: here or from any terminal); the last resumes.

    Only what the person may still do is asked: a routed request they may not decide (their own run's, under
    separation of duties) or already voted on says who it waits for instead. `False`: nothing was asked.
    """
    console.print(f"[yellow]The agent is waiting on {len(result.requests)} request(s).[/yellow]")
    answered = False
    for request in result.requests:
        votes = result.votes.get(request.request_id, ())
        # A question's words and choices are asked just below, once; its panel would say them twice.
        console.print(request_panel(request, brief=isinstance(request, QuestionRequest), votes=votes))
        waiting = _not_yours(runtime, request, votes, principal)
        if waiting is not None:
            console.print(Text(waiting, style="yellow"))
            continue
        answered = True
        held = is_held(request)
        if held:
            say_held(console, request, config)
        while True:
            decision = await _held(runtime, console, result, request, principal) if held else _ask(console, request)
            if isinstance(decision, RunResult):
                return decision, True  # answered elsewhere: the run moved on
            try:
                with console.status("working…"):
                    outcome = await interruptible(
                        runtime, deciding(runtime, request, decision, principal), config=config, as_json=False
                    )
            except (AlreadyDecided, RequestExpired, CallEnded) as gone:
                # No answer will be taken (decided elsewhere, expired): asked again, it would be asked for ever.
                console.print(f"[red]not accepted:[/red] {escape(_problem(gone))}. It takes no answer now.")
                now = await runtime.result(result.run_id, principal=principal)
                return now, all(r.request_id != request.request_id for r in now.requests)
            except (DecisionRefused, InvalidInput) as refused:
                console.print(
                    f"[red]not accepted:[/red] {escape(_problem(refused))}. The request is still open; try again."
                )
                continue
            break
        result = outcome.run
    return result, answered


_LIMITS = {"message": "message_chars", "edited_args": "argument_bytes", "answer": "answer_bytes"}
"""The `limits:` entry each field a size limit refuses is measured against (`_core.limits`)."""


def _problem(refused: DecisionRefused | InvalidInput | NotAllowed) -> str:
    """What was refused, in words; a size over its limit names the config's entry, for whoever may raise it."""
    if isinstance(refused, TooLarge) and refused.field in _LIMITS:
        return f"{refused.problem} (limits.{_LIMITS[refused.field]})"
    return refused.problem


def _not_yours(runtime: Sayso, request: Request, votes: tuple[Vote, ...], principal: str) -> str | None:
    """Why the chat does not ask `principal` about `request`, naming who it waits for; `None`: ask.

    Asked anyway, the decision would only be refused (and the chat, before, ended on it), or, for a vote
    already cast, counted once and asked again and again.
    """
    routing = request.routing
    why = refusal(runtime.principal(principal), owner=request.principal, agent_path=request.agent_path, routing=routing)
    if routing is None:
        return None if why is None else f"you may not decide this request ({why})"
    stands = quorum(routing, votes, starter=request.principal, proposed=request.args)
    who = ", ".join(stands.waiting_for or routing.named)
    if why is not None:
        return f"waiting for {who}: you may not decide this request ({why})"
    if principal in {v.principal for v in stands.votes if v.round == stands.round}:
        return f"you voted; waiting for {who}"
    return None


def _nothing_to_decide(runtime: Sayso, console: Console, result: RunResult, principal: str) -> None:
    """What the person may do when every open request waits for someone else: write (the owner only) or leave."""
    owner = result.requests[0].principal if result.requests else None
    if owner is None or may_message(runtime.principal(principal), owner=owner):
        console.print("[dim]Nothing open is yours to decide: type a new message, or 'exit' to leave.[/dim]")
    else:
        console.print(
            f"[dim]Nothing open is yours to decide, and only {escape(owner)} writes here: 'exit' leaves.[/dim]"
        )


async def _send(
    runtime: Sayso, console: Console, text: str, *, agent: str, thread_id: str | None, principal: str, config: str
) -> RunResult | None:
    """A message sent and worked on; `None` when it is refused (too long, a NUL character, not the person's thread).

    A refused message said why and the chat asks for another: ending on it lost the conversation's prompt.
    """
    try:
        with console.status("working…"):
            sent = _sending(runtime, text, agent=agent, thread_id=thread_id, principal=principal)
            return await interruptible(runtime, sent, config=config, as_json=False)
    except AgentNotFound:
        raise  # no message would be taken: the chat cannot go on
    except (InvalidInput, NotAllowed) as refused:
        console.print(f"[red]not sent:[/red] {escape(_problem(refused))}. Nothing changed; try again.")
        return None


def _sending(
    runtime: Sayso, text: str, *, agent: str, thread_id: str | None, principal: str
) -> Callable[[Where], Awaitable[RunResult]]:
    """A message's work, noting its run and thread once it is taken, as `sayso run` does."""
    return lambda where: runtime.run(
        text, agent=agent, thread_id=thread_id, principal=principal, via="cli", on_start=where.note
    )


async def _held(
    runtime: Sayso, console: Console, result: RunResult, request: Request, principal: str
) -> Decision | RunResult:
    asked = await ask_held(runtime, console, result, request, lambda r: _ask(console, r), principal=principal)
    if isinstance(asked, Cancelled):
        print_result(console, asked.result)
        raise _Left(result.thread_id)
    return asked


def _ask(console: Console, request: Request) -> Decision:
    if isinstance(request, ApprovalRequest):
        return _ask_approval(console, request)
    if isinstance(request, QuestionRequest):
        return _ask_questions(console, request)
    if isinstance(request, InputRequest):
        return _ask_input(console, request)
    if isinstance(request, ElicitationRequest):
        return _ask_elicitation(console, request)
    assert isinstance(request, ClientToolRequest)
    return _ask_client_tool(console, request)


def _ask_approval(console: Console, request: ApprovalRequest) -> Decision:
    editable = not is_remote_call(request)  # a remote agent's call takes no edits: not offered, as nowhere else
    while True:
        edit = r"\[e]dit and approve, " if editable else ""
        prompt = rf"\[a]pprove, {edit}\[r]eject, \[s]kip, or \[n]ew message? "
        choice = read_line(console, prompt).strip().lower()
        if choice in ("a", "approve"):
            scope = _ask_scope(console, request.scopes)
            if request.response_schema is None:
                return Approve(scope=scope)
            console.print("[bold]Your feedback[/bold] [dim](empty leaves a field out)[/dim]")
            return Approve(scope=scope, payload=fill(console, request.response_schema))
        if choice in ("e", "edit") and editable:
            console.print(Text(f"current arguments: {json.dumps(shown_args(request), ensure_ascii=False)}"))
            raw = read_line(console, "new arguments (JSON object)> ")
            try:
                edited = json.loads(raw)
            except json.JSONDecodeError as exc:
                console.print(f"[red]not JSON:[/red] {exc}")
                continue
            if not isinstance(edited, dict):
                console.print("[red]the arguments must be a JSON object[/red]")
                continue
            return Approve(scope=_ask_scope(console, request.scopes), edited_args=edited)
        if choice in ("r", "reject"):
            reason = read_line(console, "reason (optional)> ").strip()
            return Reject(reason=reason or None)
        if choice in ("s", "skip"):
            return Skip(reason=None)
        if choice in ("n", "new"):
            text = read_line(console, "[bold cyan]you>[/bold cyan] ").strip()
            if text:
                raise NewMessage(text)
            continue
        console.print("please answer a, e, r, s or n")


def _ask_scope(console: Console, scopes: tuple[Scope, ...]) -> Scope:
    if len(scopes) == 1:
        return scopes[0]
    labels = {"once": "just this call", "thread": "allow for this chat", "always": "always allow"}
    for n, scope in enumerate(scopes, 1):
        console.print(f"  {n}) {labels[scope]}")
    while True:
        raw = read_line(console, r"remember? \[1]> ").strip() or "1"
        if raw.isdigit() and 1 <= int(raw) <= len(scopes):
            return scopes[int(raw) - 1]
        console.print(f"please pick 1 to {len(scopes)}")


def _ask_questions(console: Console, request: QuestionRequest) -> Decision:
    answers: list[tuple[str, ...]] = []
    for question in request.questions:
        console.print(Text(question.question, style="bold"))
        for n, choice in enumerate(question.choices, 1):
            console.print(Text(f"  {n}) {choice}"))
        if question.choices:
            console.print(f"  {len(question.choices) + 1}) Other (type your own words)")
        hint = "numbers separated by commas, or your own words" if question.multiple else "a number, or your own words"
        raw = read_line(console, f"answer ({hint})> ").strip()
        answers.append(_picks(raw, question.choices, multiple=question.multiple, console=console))
    return Answer(answers=tuple(answers))


def _picks(raw: str, choices: tuple[str, ...], *, multiple: bool, console: Console) -> tuple[str, ...]:
    parts = [p.strip() for p in raw.split(",")] if multiple else [raw]
    if parts and all(p.isdigit() for p in parts):
        picked: list[str] = []
        for p in parts:
            n = int(p)
            if 1 <= n <= len(choices):
                picked.append(choices[n - 1])
            elif n == len(choices) + 1:
                picked.append(read_line(console, "your words> ").strip())
            else:
                picked.append(p)
        return tuple(picked)
    return tuple(parts) if multiple else (raw,)


def _ask_input(console: Console, request: InputRequest) -> Decision:
    """A workflow's question as a form at the prompt, field by field; `!skip` or `!new` at any field."""
    console.print(
        f"[dim]Fill in each field (empty leaves it out), or type {SKIP} to skip, {NEW} for a new message.[/dim]"
    )
    try:
        return Provide(value=fill(console, request.response_schema))
    except Skipped:
        return Skip(reason="the person skipped the input")


def _ask_client_tool(console: Console, request: ClientToolRequest) -> Decision:
    raw = read_line(console, "result (JSON or text), 'error: MESSAGE', or empty to skip> ").strip()
    if not raw:
        return Skip(reason=None)
    if raw.startswith("error:"):
        return ClientError(message=raw.removeprefix("error:").strip())
    value: Any
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return ClientResult(value=value)


def _ask_elicitation(console: Console, request: ElicitationRequest) -> Decision:
    """A server's page (visit it, then say done) or form (filled in field by field), or decline / cancel."""
    first = r"\[d]one (after visiting the page)" if request.mode == "url" else r"\[f]ill in the form"
    while True:
        choice = read_line(console, f"{first}, \\[x] decline, \\[c]ancel, or \\[n]ew message? ").strip().lower()
        if choice in ("d", "done") and request.mode == "url":
            return Accept()
        if choice in ("f", "fill") and request.mode == "form":
            return Accept(content=fill_form(console, request.requested_schema or {}))
        if choice in ("x", "decline"):
            return Decline()
        if choice in ("c", "cancel"):
            return Cancel()
        if choice in ("n", "new"):
            text = read_line(console, "[bold cyan]you>[/bold cyan] ").strip()
            if text:
                raise NewMessage(text)
            continue
        console.print(f"please answer {'d' if request.mode == 'url' else 'f'}, x, c or n")
