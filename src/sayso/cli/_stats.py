"""`sayso stats`: how approvals went over a window — time to decide, and the rates per tool, rule and approver."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ._app import ConfigArg, JsonOpt, app, console
from ._command import Command
from ._exits import WRONG
from ._open import fail, with_reader

if TYPE_CHECKING:
    from .._core.stats import Rates


@app.command(cls=Command)
def stats(
    config: ConfigArg,
    window: Annotated[str, typer.Option(help="How far back: seconds, or 15m, 24h, 7d.", metavar="DURATION")] = "7d",
    as_json: JsonOpt = False,
) -> None:
    """Time to decide (p50, p90) and what became of the requests, open ones too, per tool, rule and approver."""
    from .._core.escalation import parse_duration
    from .._runtime import stats_json

    try:
        seconds = parse_duration(window)
    except ValueError as exc:
        fail("BadParameter", f"--window: {exc}", code=WRONG, as_json=as_json)
    found = with_reader(config, lambda rt: rt.stats(window_seconds=seconds), as_json=as_json)
    if as_json:
        print(json.dumps(stats_json(found), ensure_ascii=False))
        return
    console.print(f"approval requests of the last {escape(window)}: {found.overall.requests}", highlight=False)
    for title, groups in (
        ("overall", {"all": found.overall}),
        ("per tool", found.by_tool),
        ("per rule", found.by_rule),
        ("per approver", found.by_approver),
    ):
        if groups:
            console.print(_table(title, groups))


def _table(title: str, groups: dict[str, Rates]) -> Table:
    """What became of each group's requests, open ones included: each rate is a share of all of them.

    Without the open ones (`--json`'s and REST's `open`) the outcome columns read short of 100 %. Ten
    columns: drawn without the box's lines they fit 100 columns, and in 80 a share wraps under its
    count instead of being cut short.
    """
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, collapse_padding=True)
    columns = ("", "requests", "approved", "rejected", "expired", "closed", "open", "escalated", "p50", "p90")
    table.add_column(columns[0], no_wrap=True)  # a tool's, rule's or approver's name whole; the numbers wrap first
    for column in columns[1:]:
        table.add_column(column, justify="right")
    for name, rates in groups.items():
        table.add_row(
            name,
            str(rates.requests),
            _rate(rates.approved, rates.approval_rate),
            _rate(rates.rejected, rates.rejection_rate),
            _rate(rates.expired, rates.expiry_rate),
            _rate(rates.closed, rates.closed_rate),
            _rate(rates.open, rates.open_rate),
            _rate(rates.escalated, rates.escalation_rate),
            _seconds(rates.decide_p50_seconds),
            _seconds(rates.decide_p90_seconds),
        )
    return table


def _rate(count: int, share: float | None) -> str:
    return f"{count} ({share:.0%})" if share is not None else str(count)


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 3600:
        return f"{value / 3600:.1f}h"
    return f"{value / 60:.1f}m" if value >= 60 else f"{value:.0f}s"
