"""How each `sayso` command's help reads: `CONFIG` rather than `{CONFIG} <str>`, flags without `<bool>`.

And how the options whose values a type alone does not bound are checked (a port, seconds).
"""

from __future__ import annotations

import math
from typing import Any

import typer
from typer.core import TyperCommand


class Command(TyperCommand):
    """A command whose help reads plainly: `CONFIG` rather than `{CONFIG} <str>`, flags without `<bool>`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["rich_markup_mode"] = None
        super().__init__(*args, **kwargs)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        params = self.get_params(ctx)
        arguments = [
            (_argument_name(p), getattr(p, "help", None) or "") for p in params if p.param_type_name == "argument"
        ]
        options = [r for p in params if p.param_type_name == "option" and (r := p.get_help_record(ctx)) is not None]
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _argument_name(param: Any) -> str:
    name = str(param.metavar or (param.name or "").upper())
    return f"{name}..." if param.nargs != 1 else name


def port_number(port: int | None) -> int | None:
    """A TCP port as `serve` takes it: 0 (any free one) to 65535 (the socket library raised on anything else)."""
    if port is not None and not 0 <= port < 65536:
        raise typer.BadParameter(f"{port} is not a TCP port: use 1 to 65535 (0: any free one)")
    return port


def sweep_seconds(seconds: float) -> float:
    """Seconds between sweeps: 0 (off) or more; a negative or NaN one stopped the server's start with a traceback."""
    if not math.isfinite(seconds) or seconds < 0:
        raise typer.BadParameter(f"{seconds} is not a number of seconds: use 0 (off) or more")
    return seconds
