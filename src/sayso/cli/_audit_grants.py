"""`sayso grants` and `sayso audit`: the remembered approvals and the hash-chained audit log, read from the store."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ._app import ConfigArg, JsonOpt, PrincipalOpt, app, console, errors
from ._command import Command as _Command
from ._exits import FAILED, WRONG
from ._open import check_id, fail
from ._open import with_reader as _with_reader

if TYPE_CHECKING:
    from .._runtime import Reader

grants_app = typer.Typer(help="Remembered approvals: list and revoke.", no_args_is_help=True, rich_markup_mode=None)
audit_app = typer.Typer(
    help="The hash-chained audit log: list, verify and anchor it.", no_args_is_help=True, rich_markup_mode=None
)
app.add_typer(grants_app, name="grants")
app.add_typer(audit_app, name="audit")


@grants_app.command("list", cls=_Command)
def grants_list(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """List the active remembered approvals."""
    from .._core.access import LOCAL
    from ._render import grants_table

    grants = _with_reader(config, lambda rt: rt.grants(principal=LOCAL), as_json=as_json)
    if as_json:
        print(json.dumps({"grants": [asdict(g) for g in grants]}, ensure_ascii=False))
        return
    console.print(grants_table(grants) if grants else "no active grants")


@grants_app.command("revoke", cls=_Command)
def grants_revoke(
    config: ConfigArg,
    grant_id: Annotated[str, typer.Argument(help="The grant to revoke.", metavar="GRANT_ID")],
    principal: PrincipalOpt = "local",
    as_json: JsonOpt = False,
) -> None:
    """Revoke a remembered approval; the next call it covered asks again."""
    check_id("GRANT_ID", grant_id, what="a grant id", example="grt_", as_json=as_json)
    grant = _with_reader(
        config, lambda rt: rt.revoke_grant(grant_id, principal=principal), as_json=as_json, principal=principal
    )
    if as_json:
        print(json.dumps({"revoked": asdict(grant)}, ensure_ascii=False))
    else:
        console.print(f"revoked {grant.grant_id} ({grant.tool} on {grant.subject_label})")


AUDIT_SHOWN = 50
"""How many of the newest audit records `sayso audit list` prints unless `--limit` or `--all` says otherwise."""
AUDIT_PAGE = 500
"""How many audit records `sayso audit list` reads from the store at a time."""


@audit_app.command("list", cls=_Command)
def audit_list(
    config: ConfigArg,
    limit: Annotated[
        int | None,
        typer.Option("--limit", metavar="N", help=f"Print the newest N records, 1 or more (default {AUDIT_SHOWN})."),
    ] = None,
    every: Annotated[bool, typer.Option("--all", help="Print every record, oldest first.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the newest audit records, oldest of them first; says how many older ones there are.

    A long log is read from the store a page at a time: `--all` prints each page as it comes.
    """
    from .._core.access import LOCAL
    from .._core.audit import AuditRecord
    from ._render import audit_table

    if limit is not None and limit < 1:  # checked here, not by typer, so `--json` gets its one JSON error
        fail("BadParameter", f"--limit must be 1 or more, not {limit}", code=WRONG, as_json=as_json)
    if every and limit is not None:
        fail("BadParameter", "--limit and --all both say how many to print: give one", code=WRONG, as_json=as_json)
    wanted = limit or AUDIT_SHOWN

    def show(records: list[AuditRecord], *, first: bool) -> None:
        if as_json:  # one JSON object, begun once the store answered (else the error is the only output)
            lines = ",".join(json.dumps(asdict(r), ensure_ascii=False) for r in records)
            print('{"records": [' + lines if first else f",{lines}" if lines else "", end="")
        elif records or first:
            console.print(audit_table(records))

    async def newest(rt: Reader) -> tuple[int, int]:
        # Newest first from the store, a page at a time; shown oldest first, so the newest is by the prompt.
        page = await rt.audit_page(principal=LOCAL, newest_first=True, limit=min(wanted, AUDIT_PAGE))
        total, read = page.total, list(page.records)
        while page.next_cursor is not None and len(read) < wanted:
            limited = min(wanted - len(read), AUDIT_PAGE)
            page = await rt.audit_page(principal=LOCAL, newest_first=True, limit=limited, cursor=page.next_cursor)
            read += page.records
        show(read[::-1], first=True)
        return len(read), total

    async def oldest(rt: Reader) -> tuple[int, int]:
        page = await rt.audit_page(principal=LOCAL, newest_first=False, limit=AUDIT_PAGE)
        shown, total = len(page.records), page.total
        show(page.records, first=True)
        while page.next_cursor is not None:
            page = await rt.audit_page(principal=LOCAL, newest_first=False, limit=AUDIT_PAGE, cursor=page.next_cursor)
            shown += len(page.records)
            show(page.records, first=False)
        return shown, total

    shown, total = _with_reader(config, oldest if every else newest, as_json=as_json)
    if as_json:
        print(f'], "total": {total}}}')
    elif shown < total:
        console.print(
            f"the newest {shown} of {total} records; {total - shown} older ones: --limit N shows more, --all every one"
        )


@audit_app.command("anchor", cls=_Command)
def audit_anchor(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Vouch once for audit records written before an audit key was set, so new records can be signed.

    Run it once after setting SAYSO_AUDIT_KEY on a store that already has an audit log, and only if
    you trust that log as it stands: verify accepts the records before the anchor, signed ones after.
    """
    vouched = _with_reader(config, lambda rt: rt.anchor_audit(), as_json=as_json)
    if as_json:
        print(json.dumps({"vouched_for": vouched}))
    elif vouched:
        console.print(f"vouched for {vouched} unsigned record(s); new records are signed")
    else:
        console.print("nothing to vouch for: the audit log is empty or already signed")


@audit_app.command("verify", cls=_Command)
def audit_verify(config: ConfigArg, as_json: JsonOpt = False) -> None:
    """Check the audit chain; exits 1 and names the first bad record when it was tampered with.

    With an audit key (SAYSO_AUDIT_KEY) the chain is anchored: rewrites, forged appends and a cut
    tail are detected. Without one the output says UNANCHORED. A log written before the key was set
    is not anchored yet (exit 1): `sayso audit anchor` vouches for it once.
    """
    report = _with_reader(config, lambda rt: rt.audit_report(), as_json=as_json)
    problem = report.problem
    if as_json:
        body: dict[str, object] = {"records": report.records, "ok": report.intact}
        body["problem"] = asdict(problem) if problem else None
        body |= {"anchored": report.anchored, "note": report.note, "predates_key": report.predates_key}
        print(json.dumps(body))
    elif problem is None:
        console.print(f"audit log intact: {report.records} record(s)")
        (console if report.anchored else errors).print(escape(report.note), soft_wrap=True)
    else:
        tampered = f"[red]audit log tampered at record {problem.seq}:[/red]"
        heading = "[yellow]audit log not yet anchored:[/yellow]" if report.predates_key else tampered
        errors.print(f"{heading} {escape(problem.problem)}", soft_wrap=True)
        errors.print(escape(report.note), soft_wrap=True)
    if problem is not None:
        raise typer.Exit(FAILED)
