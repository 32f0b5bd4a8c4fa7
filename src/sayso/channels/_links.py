"""`/v1/links/{token}`: the page a mailed link opens — confirm (GET, never decides) and decide (POST, once).

The token is the credential: signed by the runtime, bound to one request, one principal and the
arguments the mail showed, expiring and single-use. A link that no longer decides answers a plain
page that says why (decided, expired, changed, used) with a 4xx status, never an error trace.
The form posts back to the same address as an ordinary HTML form (the edge guard lets these paths
take forms: the token in the path, not a cookie, is what authorizes them). The page a decision
answers says what it did (`_outcome`): counted or not, where a quorum stands, whether the run went on.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from .._core.decisions import Approve, Decision, Reject
from .._runtime import Sayso, request_json
from ..exceptions import DecisionRefused, LinkRefused, NotAllowed, RequestNotFound, TooLarge
from ._outcome import told

LINKS_PATH = "/v1/links"

_STATUS = {"invalid": 404, "expired": 410, "used": 410, "decided": 409, "changed": 409}
_TITLE = {
    "invalid": "This link does not work",
    "expired": "This link has expired",
    "used": "This link was already used",
    "decided": "Already decided",
    "changed": "This request changed",
}
_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}"
    "pre,textarea{font:14px ui-monospace,monospace;width:100%;box-sizing:border-box}"
    "button{font:inherit;padding:.4rem 1rem;margin:.5rem .5rem 0 0}.error{color:#a00}"
)


def links_router(sayso: Sayso) -> APIRouter:
    """The confirm page and its form, for every link the email channel mails."""
    router = APIRouter(include_in_schema=False)

    @router.get(LINKS_PATH + "/{token}")
    async def confirm(token: str, action: str = "approve") -> HTMLResponse:
        try:
            view = await sayso.open_link(token)
        except LinkRefused as exc:
            return _refused(exc)
        except (NotAllowed, RequestNotFound) as exc:
            return _not_theirs(exc)
        return _page("Decide", _form(request_json(view.state.request, votes=view.state.votes), view.principal, action))

    @router.post(LINKS_PATH + "/{token}")
    async def decide(token: str, request: Request) -> HTMLResponse:
        fields = form_fields(await request.body())
        action, reason, args = fields.get("action", ""), fields.get("reason", ""), fields.get("args", "")
        try:
            decision = _decision(action, reason, args)
            done = await sayso.decide_by_link(token, decision)
        except LinkRefused as exc:
            return _refused(exc)
        except (NotAllowed, RequestNotFound) as exc:
            return _not_theirs(exc)
        except (DecisionRefused, ValueError) as exc:
            try:
                view = await sayso.open_link(token)
            except LinkRefused as closed:
                return _refused(closed)
            except (NotAllowed, RequestNotFound) as refused:
                return _not_theirs(refused)
            error = f'<p class="error" role="alert">{html.escape(str(exc))}</p>'
            again = _form(
                request_json(view.state.request, votes=view.state.votes), view.principal, action, args=args or None
            )
            return _page("Decide", error + again, status=413 if isinstance(exc, TooLarge) else 422)
        said = await told(sayso, decision, done)
        return _page(said.title, f"<p>{html.escape(said.text)}</p>")

    return router


def form_fields(body: bytes) -> dict[str, str]:
    """An HTML form's fields (`application/x-www-form-urlencoded`), the last of each name winning."""
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except UnicodeDecodeError:
        return {}


def args_shown(request: Mapping[str, Any]) -> Any:
    """The arguments a notice shows of a request's JSON: what a plain approval through it approves.

    Those its quorum's votes are about now (an edit vote's), else the proposed ones.
    """
    quorum = request.get("quorum") or {}
    return quorum["args"] if quorum.get("args") is not None else request.get("args", {})


def _decision(action: str, reason: str, args: str) -> Decision:
    if action == "reject":
        return Reject(reason=reason.strip() or None)
    if action == "approve":
        return Approve()
    if action == "edit":
        try:
            edited = json.loads(args)
        except ValueError as exc:
            raise ValueError(f"the arguments are not JSON: {exc}") from None
        if not isinstance(edited, dict):
            raise ValueError("the arguments must be a JSON object")
        return Approve(edited_args=edited)
    raise ValueError(f"unknown action {action!r}: approve, reject or edit")


def _form(request: Mapping[str, Any], principal: str, action: str, *, args: str | None = None) -> str:
    esc = html.escape
    tool, agent = request["tool_name"], request["agent_path"]
    shown = json.dumps(args_shown(request), indent=2, ensure_ascii=False, sort_keys=True)
    hint = request.get("hint") or f"{agent} asks before calling {tool}"
    expires = f"<p>Expires {esc(request['expires'])}.</p>" if request.get("expires") else ""
    edit = action == "edit"
    return f"""<p><strong>{esc(agent)}</strong> wants to call <code>{esc(tool)}</code>.</p>
<p>{esc(hint)}</p>
<h2>Arguments</h2><pre>{esc(shown)}</pre>{expires}
<p>You decide as <strong>{esc(principal)}</strong>. Nothing happens until you press a button.</p>
<form method="post">
<input type="hidden" name="action" value="approve">
<button type="submit">Approve</button>
</form>
<form method="post">
<input type="hidden" name="action" value="reject">
<label>Reason (the agent reads it)<br><textarea name="reason" rows="3"
{"autofocus" if action == "reject" else ""}></textarea></label><br>
<button type="submit">Reject</button>
</form>
<details{" open" if edit else ""}><summary>Edit the arguments</summary>
<form method="post">
<input type="hidden" name="action" value="edit">
<label>Arguments (JSON)<br><textarea name="args" rows="8">{esc(args or shown)}</textarea></label><br>
<button type="submit">Approve with these arguments</button>
</form></details>"""


def _refused(exc: LinkRefused) -> HTMLResponse:
    return _page(_TITLE[exc.problem], f"<p>{html.escape(exc.detail)}</p>", status=_STATUS[exc.problem])


def _not_theirs(exc: NotAllowed | RequestNotFound) -> HTMLResponse:
    """A link mailed to someone who may not decide its request: as the decide verb refuses them, opened or posted."""
    if isinstance(exc, NotAllowed):
        return _page("Not yours to decide", f"<p>{html.escape(exc.problem)}</p>", status=403)
    return _page(_TITLE["invalid"], f"<p>{html.escape(str(exc))}</p>", status=404)  # as if it did not exist


def _page(title: str, body: str, *, status: int = 200) -> HTMLResponse:
    text = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="no-referrer">
<title>{html.escape(title)} · sayso</title><style>{_STYLE}</style></head>
<body><main><h1>{html.escape(title)}</h1>{body}</main></body></html>"""
    return HTMLResponse(text, status_code=status, headers={"Cache-Control": "no-store"})
