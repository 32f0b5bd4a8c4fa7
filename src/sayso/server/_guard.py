"""`EdgeGuard`: the one ASGI wrapper in front of every HTTP interface (REST, the web UI, A2A, AG-UI).

What no endpoint should have to remember, applied once before any of them runs (what a user
reads of it: docs/guides/operations.md#local-development-mode and #limits):

- **local mode serves loopback only**: a request whose `Host` is not a loopback name is refused,
  so a web page on another name that resolves to 127.0.0.1 (DNS rebinding) cannot drive it;
- **POSTs are JSON** (or carry a bearer token): a cross-site page can send a `text/plain`, form or
  bodiless POST without a CORS preflight, never an `application/json` one. The paths the server is
  told take forms (`form_paths`: a mailed link's page, whose signed token is in its path; Slack's
  interactions, signed over their body) authorize by what they carry, so a form is fine there. The other state-changing
  methods (`DELETE`, `PUT`, `PATCH`) cannot be sent cross-site without a preflight at all, and this
  server grants none (it sends no CORS headers), so they need no such check;
- **a body is JSON**: a bearer token lets a POST through without the JSON type (it needs no body:
  `POST /v1/expire`), but a body it carries must still say `application/json` (415), else the
  endpoint would read it as no object at all ("Input should be a valid dictionary");
- **bodies are bounded and well-formed**: a body over `limits.request_bytes` is refused before it is
  read in full (413); one that is not UTF-8 JSON (`NaN`, `Infinity` and numbers too large for a float
  included: Python's parser takes them, but they are not JSON, and a stored record writes them as `null`
  while the agent read them as numbers), or nests deeper than `limits.json_depth`, is a 400;
- **nothing is framed**: every response says `X-Frame-Options: DENY` and `frame-ancestors 'none'`,
  and the web UI is served under a strict Content Security Policy (its own scripts and styles only).

Refusals are problem documents (`application/problem+json`), except on A2A's JSON-RPC endpoints,
which answer with a JSON-RPC error body so A2A clients can read them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.body_limit import RequestBodyLimitMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._config.file import LimitsConfig
from ._problems import PROBLEM_BASE, PROBLEM_MEDIA_TYPE

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
"""The `Host` names a local-mode server answers to (any port), checked by Starlette's `TrustedHostMiddleware`."""

STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})

UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The web UI's policy: its own scripts, styles and API only; no inline code, plugins or framing."""

FRAME_CSP = "frame-ancestors 'none'"
"""Every other response: never framed."""

_JSON_RPC_PARSE_ERROR = -32700
_JSON_RPC_INVALID_REQUEST = -32600


class EdgeGuard:
    """Wraps the server's ASGI app with the checks above.

    Starlette's middlewares do two of them: `TrustedHostMiddleware` (loopback names only, in local
    mode) and `RequestBodyLimitMiddleware` (`limits.request_bytes`, declared or streamed). What
    they refuse is answered as every other refusal here (a problem document, or a JSON-RPC error on
    A2A) rather than in their plain text. The guard keeps what no library does: the JSON-only POST
    rule, the JSON checks and the security headers.

    Args:
        app: the server.
        local_mode: no principals are configured (every caller is `local`): enforce loopback `Host`s.
        limits: the configured request body size and JSON depth.
    """

    def __init__(
        self, app: ASGIApp, *, local_mode: bool, limits: LimitsConfig, form_paths: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.local_mode = local_mode
        self.limits = limits
        checked = RequestBodyLimitMiddleware(_JsonBodies(app, limits, form_paths), max_body_size=limits.request_bytes)
        posts = _JsonPosts(checked, form_paths)
        self._guarded: ASGIApp = (
            TrustedHostMiddleware(posts, allowed_hosts=sorted(LOOPBACK_NAMES), www_redirect=False)
            if local_mode
            else posts
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        send = _with_security_headers(send, ui=path == "/" or path.startswith("/static/"))
        await self._guarded(scope, receive, _library_refusals(send, scope, self.limits))


class _JsonPosts:
    """A POST is JSON or carries a bearer token (no cross-site page can send one without a preflight)."""

    def __init__(self, app: ASGIApp, form_paths: tuple[str, ...]) -> None:
        self.app = app
        self.form_paths = form_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        content_type = headers.get("content-type")
        if (
            scope["method"] == "POST"
            and not is_json(content_type)
            and not headers.get("authorization")
            and not _takes_forms(scope, self.form_paths)
        ):
            await _refuse(
                send,
                415,
                "unsupported-media-type",
                "Unsupported media type",
                f"a POST must be sent as application/json (even without a body), not {content_type or 'no type'!r}",
                rpc=_is_rpc(scope),
                code=_JSON_RPC_INVALID_REQUEST,
            )
            return
        await self.app(scope, receive, send)


class _JsonBodies:
    """A state-changing request's body says JSON, is UTF-8 JSON, and nests no deeper than `limits.json_depth`.

    A body on `form_paths` may be a form. Runs inside Starlette's body limit, so reading the body stops at
    `limits.request_bytes`.
    """

    def __init__(self, app: ASGIApp, limits: LimitsConfig, form_paths: tuple[str, ...]) -> None:
        self.app = app
        self.limits = limits
        self.form_paths = form_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] not in STATE_CHANGING:
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        content_type = Headers(scope=scope).get("content-type")
        if body and not is_json(content_type) and not _takes_forms(scope, self.form_paths):
            await _refuse(
                send,
                415,
                "unsupported-media-type",
                "Unsupported media type",
                f"a body must be sent as application/json, not {content_type or 'no type'!r}",
                rpc=_is_rpc(scope),
                code=_JSON_RPC_INVALID_REQUEST,
            )
            return
        problem = json_problem(body, max_depth=self.limits.json_depth) if body and is_json(content_type) else None
        if problem is not None:
            await _refuse(
                send, 400, "malformed-body", "Malformed body", problem, rpc=_is_rpc(scope), code=_JSON_RPC_PARSE_ERROR
            )
            return
        await self.app(scope, _replay(body, receive), send)


def _takes_forms(scope: Scope, form_paths: tuple[str, ...]) -> bool:
    """Whether the request's path is one the server is told takes forms (what they carry authorizes them)."""
    return bool(form_paths) and str(scope["path"]).startswith(form_paths)


def _is_rpc(scope: Scope) -> bool:
    """A2A's JSON-RPC endpoints answer refusals as JSON-RPC errors."""
    path: str = scope["path"]
    return path.startswith(("/a2a/", "/agents/"))


def _library_refusals(send: Send, scope: Scope, limits: LimitsConfig) -> Send:
    """`send`, with the plain-text refusals of Starlette's host and body-limit middlewares said as ours.

    The app itself never answers a 400 or 413 in plain text (its errors are problem documents), so a
    plain-text one is the library's.
    """
    replaced = False

    async def sending(message: Message) -> None:
        nonlocal replaced
        if message["type"] == "http.response.start":
            status = message["status"]
            media = Headers(raw=message.get("headers", [])).get("content-type", "")
            if status in (400, 413) and media.startswith("text/plain"):
                replaced = True
                if status == 400:
                    host = Headers(scope=scope).get("host")
                    await _refuse(
                        send,
                        400,
                        "invalid-host",
                        "Invalid host",
                        f"this server runs in local development mode and answers only to 127.0.0.1 or localhost, "
                        f"not {host!r}",
                        rpc=_is_rpc(scope),
                        code=_JSON_RPC_INVALID_REQUEST,
                    )
                else:
                    await _refuse(
                        send,
                        413,
                        "too-large",
                        "Too large",
                        _too_large(scope, limits),
                        rpc=_is_rpc(scope),
                        code=_JSON_RPC_INVALID_REQUEST,
                    )
                return
        elif replaced and message["type"] == "http.response.body":
            return  # the library's own text, already answered
        await send(message)

    return sending


def _too_large(scope: Scope, limits: LimitsConfig) -> str:
    """Why a body over `limits.request_bytes` was refused; for AG-UI, why a conversation outgrows it.

    An AG-UI client sends the thread's whole history with every run, so the body grows with the
    conversation although each message is short. The cap still counts the whole body: it is what keeps
    a body from being read, and parsed, before anything else is checked.
    """
    said = f"the request body is larger than the limit of {limits.request_bytes} bytes"
    if not str(scope["path"]).startswith("/ag-ui/"):
        return said
    return (
        f"{said}; an AG-UI client sends the thread's whole history with every run, so a long conversation "
        "outgrows it: raise limits.request_bytes for such threads (docs/guides/ag-ui.md#the-body-limit), "
        "or start a new thread"
    )


def is_json(content_type: str | None) -> bool:
    """Whether a `Content-Type` is JSON (`application/json`, or `application/…+json`), parameters aside."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def json_problem(body: bytes, *, max_depth: int) -> str | None:
    """What is wrong with a JSON body (not UTF-8, not JSON, nested too deeply), or `None` when it is fine."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the body is not UTF-8 (byte {exc.start})"
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        return f"the body nests deeper than {max_depth} levels"
    except ValueError as exc:
        return f"the body is not JSON: {exc}"
    if _depth(value) > max_depth:
        return f"the body nests deeper than {max_depth} levels"
    return None


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not a JSON number")


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"{literal} is too large for a number")
    return value


def _depth(value: Any) -> int:
    """How deeply a parsed JSON value nests (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[Any] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level + 1)
        stack.extend((child, level + 1) for child in children)
    return deepest


async def _read_body(receive: Receive) -> bytes:
    """The whole body (Starlette's body limit, around this, stops it at the configured size)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then whatever the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _with_security_headers(send: Send, *, ui: bool) -> Callable[[Message], Awaitable[None]]:
    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers["X-Frame-Options"] = "DENY"
            headers["Content-Security-Policy"] = UI_CSP if ui else FRAME_CSP
            headers["X-Content-Type-Options"] = "nosniff"
            headers["Referrer-Policy"] = "no-referrer"
        await send(message)

    return sending


async def _refuse(send: Send, status: int, slug: str, title: str, detail: str, *, rpc: bool, code: int) -> None:
    """Answer a refused request without reaching the app: a problem, or a JSON-RPC error on A2A."""
    if rpc:
        body: Mapping[str, object] = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": detail}}
        media = "application/json"
    else:
        body = {"type": PROBLEM_BASE + slug, "title": title, "status": status, "detail": detail}
        media = PROBLEM_MEDIA_TYPE
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", media.encode()), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
