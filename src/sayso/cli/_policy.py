"""`sayso policy test`: what the approval rules would do with one call, and why, without running anything."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from ..exceptions import ConfigError, InvalidInput
from ._app import ConfigArg, JsonOpt, app, console
from ._command import Command
from ._exits import WRONG
from ._open import check_principal, fail

policy_app = typer.Typer(help="Approval rules: try them on a call.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(policy_app, name="policy")

_SAID = {"ask": "asks a person", "allow": "runs without asking", "deny": "is denied"}


@policy_app.command("test", cls=Command)
def policy_test(
    config: ConfigArg,
    tool: Annotated[str, typer.Option("--tool", help="The tool the model would call.", metavar="TOOL")],
    args: Annotated[str, typer.Option("--args", help="The call's arguments as a JSON object.", metavar="JSON")] = "{}",
    principal: Annotated[
        str | None, typer.Option("--as", help="Whom the run acts for (the thread's owner).", metavar="PRINCIPAL")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="The agent (default: the entry agent).", metavar="NAME")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print what the agent's approval rules would do with a call — ask, allow or deny — and why.

    The same rule the gate applies at run time, read from the config: the first rule for the tool whose
    `when:` condition holds decides. Nothing runs and nothing is stored. Arguments the agent's own tool
    would reject exit 2, naming each.
    """
    from .._config.file import load_config
    from .._config.preview import preview_call

    try:
        call_args = json.loads(args)
        if not isinstance(call_args, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        fail("BadParameter", f"--args must be a JSON object: {exc}", code=WRONG, as_json=as_json)
    try:
        loaded = load_config(config)
        check_principal(loaded, principal, option="--as")
        verdict = preview_call(loaded, tool=tool, args=call_args, principal=principal, agent=agent)
    except (ConfigError, InvalidInput) as exc:
        fail(type(exc).__name__, str(exc), code=WRONG, as_json=as_json)
    if as_json:
        shown = {"action": verdict.action, "rule": verdict.rule, "reason": verdict.reason, "error": verdict.error}
        print(json.dumps(shown, ensure_ascii=False))
        return
    rule = f" (rule {verdict.rule})" if verdict.rule else ""
    console.print(f"{escape(tool)} {_SAID[verdict.action]}: {escape(verdict.reason)}{escape(rule)}", highlight=False)
    if verdict.terms is not None:
        ttl = verdict.terms.ttl_seconds
        console.print(f"  may be remembered: {', '.join(verdict.terms.scopes)}", highlight=False)
        console.print(f"  expires after {ttl:g} s" if ttl is not None else "  waits until decided", highlight=False)
    if verdict.error is not None:
        console.print(f"  the condition failed: {escape(verdict.error)}; a person decides instead", highlight=False)
