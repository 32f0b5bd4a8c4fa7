"""How runs and requests look in the terminal."""

from __future__ import annotations

import json

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.text import Text

from .._core.requests import ApprovalRequest, ClientToolRequest, QuestionRequest, Request, shown_args
from .._results import RunResult


def _who(request: Request) -> str:
    path = request.agent_path.split("/")
    if len(path) == 1:
        return path[0]
    return f"{path[-1]} (for {'/'.join(path[:-1])})"


def request_panel(request: Request, *, index: int | None = None) -> Panel:
    """A request as a panel: what is asked, by whom, and its id for `sayso decide`."""
    body: list[RenderableType] = []
    title: str
    if isinstance(request, ApprovalRequest):
        title = f"{_who(request)} wants to run [bold]{request.tool_name}[/bold]"
        body.append(Syntax(json.dumps(shown_args(request), indent=2, ensure_ascii=False), "json", theme="ansi_dark"))
        body.append(Text(request.hint, style="italic"))
        if request.subject is not None:
            body.append(Text(f"covers: {request.subject.label}"))
        if len(request.scopes) > 1:
            body.append(Text(f"may be remembered: {', '.join(request.scopes)}"))
    elif isinstance(request, QuestionRequest):
        title = f"{_who(request)} asks"
        for q in request.questions:
            body.append(Text(q.question, style="bold"))
            for n, choice in enumerate(q.choices, 1):
                body.append(Text(f"  {n}) {choice}"))
            if q.multiple:
                body.append(Text("  (several answers allowed)", style="dim"))
    else:
        assert isinstance(request, ClientToolRequest)
        title = f"{_who(request)} asks the client to run [bold]{request.tool_name}[/bold]"
        body.append(Syntax(json.dumps(shown_args(request), indent=2, ensure_ascii=False), "json", theme="ansi_dark"))
        if request.description:
            body.append(Text(request.description, style="italic"))
    if request.expires_at is not None:
        from datetime import UTC, datetime

        body.append(Text(f"expires {datetime.fromtimestamp(request.expires_at, UTC):%Y-%m-%d %H:%M:%S} UTC"))
    body.append(Text(f"request {request.request_id}", style="dim"))
    prefix = f"[{index}] " if index is not None else ""
    return Panel(Group(*body), title=prefix + title, title_align="left", border_style="yellow")


def print_result(console: Console, result: RunResult) -> None:
    """A run result for people: the answer, or what the run waits on and how to decide it."""
    if result.status == "completed":
        console.print(Panel(result.output or "", title=f"{result.agent}", title_align="left", border_style="green"))
    elif result.status == "paused":
        console.print(f"[yellow]paused[/yellow]: run {result.run_id} waits on {len(result.requests)} request(s)")
        for n, request in enumerate(result.requests, 1):
            console.print(request_panel(request, index=n))
    elif result.status == "failed":
        console.print(f"[red]failed[/red]: {result.error}")
    else:
        console.print(f"run {result.run_id} is {result.status}")
    console.print(f"[dim]thread {result.thread_id} · run {result.run_id}[/dim]")
