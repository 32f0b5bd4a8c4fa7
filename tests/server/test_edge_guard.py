"""The HTTP edge under attack (docs/guides/operations.md#limits): local mode serves loopback only, POSTs are JSON,
bodies are bounded and
well-formed, nothing is framed, sizes are limited on every interface, and races answer with sayso's own errors.

REST, A2A and AG-UI are reached through one server; each table runs the same case against each of them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic_ai.models import Model

from sayso import Sayso, load_config
from sayso.exceptions import InvalidInput
from sayso.protocols.a2a import a2a_router
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app
from tests.tools import missing

from ..conftest import EXAMPLE, InProcess
from ..protocols.conftest import two_deletes


async def _serve(model: Model | None = None, **overrides: Any) -> InProcess:
    """The example's app (config `overrides`; `model` in place of its `demo` model), served in-process."""
    config = load_config(EXAMPLE)
    if overrides:
        config = config.model_validate({**config.model_dump(), **overrides, "base_dir": config.base_dir})
    sayso = Sayso(config, models=None if model is None else {"demo": model})
    app = create_app(sayso, routers=[a2a_router(sayso), ag_ui_router(sayso)], expire_every_seconds=None)
    return await InProcess(app=app, sayso=sayso).start()


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[InProcess]:
    """The example in local mode, with A2A and AG-UI mounted, and a small request limit."""
    (tmp_path / "sandbox").mkdir()
    for name in ("notes.txt", "todo.md"):
        (tmp_path / "sandbox" / name).write_text("x\n")
    served = await _serve(
        limits={"request_bytes": 20_000, "message_chars": 2_000, "argument_bytes": 500, "answer_bytes": 500}
    )
    yield served
    await served.stop()


def a2a_call(text: str = "list") -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def ag_ui_call(text: str = "list") -> dict[str, Any]:
    return {
        "threadId": f"thr-{uuid.uuid4().hex}",
        "runId": uuid.uuid4().hex,
        "state": None,
        "messages": [{"id": uuid.uuid4().hex, "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "forwardedProps": None,
    }


ENDPOINTS: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    "rest": ("/v1/runs", lambda text: {"message": text}),
    "a2a": ("/a2a/files", a2a_call),
    "ag-ui": ("/ag-ui/files", ag_ui_call),
}


@dataclass(frozen=True, kw_only=True)
class Bad:
    """A body no interface should take, and the status every one answers."""

    id: str
    body: bytes
    content_type: str = "application/json"
    status: int
    a2a_status: int | None = None
    """A2A's answer when it differs: JSON that is not one JSON-RPC call object is a 400 there."""


BAD_BODIES = [
    Bad(id="malformed-json", body=b'{"message": ', status=400),
    Bad(id="invalid-utf8", body=b'{"message": "\xff\xfe"}', status=400),
    Bad(id="nan", body=b'{"message": NaN}', status=400),
    Bad(id="infinite-number", body=b'{"message": 1e999}', status=400),
    Bad(id="deep-nesting", body=b"[" * 5_000 + b"]" * 5_000, status=400),
    Bad(id="deep-but-parseable", body=b'{"a":' * 100 + b"1" + b"}" * 100, status=400),
    Bad(id="not-an-object", body=b"[]", status=422, a2a_status=400),
    Bad(id="text-plain", body=b'{"message": "list"}', content_type="text/plain", status=415),
    Bad(id="form", body=b"message=list", content_type="application/x-www-form-urlencoded", status=415),
    Bad(id="too-large", body=b'{"message": "' + b"x" * 30_000 + b'"}', status=413),
]


@pytest.mark.parametrize("interface", list(ENDPOINTS))
@pytest.mark.parametrize("bad", [pytest.param(b, id=b.id) for b in BAD_BODIES])
async def test_every_bad_body_is_a_4xx_with_a_json_body_on_every_interface(
    server: InProcess, interface: str, bad: Bad
) -> None:
    """Malformed JSON, invalid UTF-8, `NaN` or a number too large, deep nesting, a non-object, a non-JSON type or an
    oversized body is refused with a 4xx whose body is JSON, on REST, A2A and AG-UI alike; nothing starts."""
    path, _ = ENDPOINTS[interface]
    async with server.client() as client:
        response = await client.post(path, content=bad.body, headers={"Content-Type": bad.content_type})
        expected = bad.a2a_status if interface == "a2a" and bad.a2a_status else bad.status
        assert response.status_code == expected, response.text
        assert isinstance(response.json(), dict)
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_a_foreign_host_is_refused_in_local_mode_and_the_ui_is_never_framed(server: InProcess) -> None:
    """DNS rebinding: a request naming another host is refused (even a read); loopback names are served, and
    every response forbids framing while the UI gets a strict policy."""
    async with server.client() as client:
        for host in ("attacker.example", "attacker.example:8000", "127.0.0.1.attacker.example"):
            refused = await client.get("/v1/requests", headers={"Host": host})
            assert (refused.status_code, refused.json()["type"]) == (400, "https://sayso.dev/problems/invalid-host")
            assert (await client.post("/a2a/files", json=a2a_call(), headers={"Host": host})).status_code == 400
        for host in ("127.0.0.1:8000", "localhost", "LOCALHOST:1234", "[::1]:8000"):
            assert (await client.get("/v1/requests", headers={"Host": host})).status_code == 200
        ui = await client.get("/")
        api = await client.get("/v1/requests")
    assert ui.headers["x-frame-options"] == api.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in ui.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in api.headers["content-security-policy"]
    assert "script-src 'self'" in ui.headers["content-security-policy"]
    assert "unsafe-inline" not in ui.headers["content-security-policy"]


async def test_with_principals_any_host_is_served_and_a_token_stands_in_for_json(tmp_path: Path) -> None:
    """Outside local mode the Host is not checked (tokens protect it), and a request with a token may POST without
    the JSON type; a body it sends (curl's `-d` without a type) is refused as not typed JSON, not "not an object"."""
    server = await _serve(principals=[{"name": "alice", "token": "alice-token"}])
    try:
        async with server.client("alice-token") as alice:
            assert (await alice.get("/v1/requests", headers={"Host": "sayso.example.com"})).status_code == 200
            resumed = await alice.post("/v1/runs/run_nope/resume", content=b"", headers={"Content-Type": "text/plain"})
            assert resumed.status_code == 404
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            untyped = await alice.post("/v1/runs", content=b'{"message": "list"}', headers=form)
            assert (untyped.status_code, untyped.json()["type"]) == (
                415,
                "https://sayso.dev/problems/unsupported-media-type",
            )
            assert "application/json" in untyped.json()["detail"]
            assert (await alice.get("/v1/threads")).json()["threads"] == []
        async with server.client() as anonymous:
            assert (await anonymous.post("/v1/expire", content=b"x")).status_code == 415
    finally:
        await server.stop()


async def test_booleans_are_strict(server: InProcess) -> None:
    """`{"force": "yes"}` or a number for a flag is refused (422), never read as true."""
    async with server.client() as client:
        paused = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        for body in ({"force": "yes"}, {"force": 1}, {"force": "true"}):
            refused = await client.post(f"/v1/runs/{paused['run_id']}/resume", json=body)
            assert refused.status_code == 422, body
        decision = {"kind": "approve", "scope": 1}
        assert (
            await client.post(f"/v1/requests/{paused['requests'][0]['id']}/decision", json=decision)
        ).status_code == 422
        assert (await client.get(f"/v1/runs/{paused['run_id']}")).json()["status"] == "paused"


@pytest.mark.parametrize("interface", list(ENDPOINTS))
async def test_a_streamed_body_over_the_limit_is_refused_without_being_read_in_full(
    server: InProcess, interface: str
) -> None:
    """A body sent in chunks, with no `Content-Length`, is refused once it passes the limit: a 413 problem on REST and
    AG-UI, a JSON-RPC error on A2A; nothing starts."""
    path, _ = ENDPOINTS[interface]

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"message": "'
        for _ in range(40):
            yield b"x" * 1_000
        yield b'"}'

    async with server.client() as client:
        response = await client.post(path, content=chunks(), headers={"Content-Type": "application/json"})
        assert "content-length" not in response.request.headers
        assert response.status_code == 413
        if interface == "a2a":
            assert "larger than the limit" in response.json()["error"]["message"]
        else:
            assert response.json()["type"] == "https://sayso.dev/problems/too-large"
        assert (await client.get("/v1/threads")).json()["threads"] == []


@pytest.mark.parametrize("interface", list(ENDPOINTS))
async def test_a_message_over_the_limit_is_refused_on_every_interface(server: InProcess, interface: str) -> None:
    """A message longer than `limits.message_chars` (but within the body limit) is refused as too large."""
    path, body = ENDPOINTS[interface]
    async with server.client() as client:
        response = await client.post(path, json=body("x" * 2_001), headers={"A2A-Version": "1.0"})
        if interface == "rest":
            assert (response.status_code, response.json()["type"]) == (413, "https://sayso.dev/problems/too-large")
        elif interface == "a2a":
            assert "2001 characters; the limit is 2000" in response.json()["error"]["message"]
        else:
            assert '"code":"too_large"' in response.text
        assert (await client.get("/v1/threads")).json()["threads"] == []


@pytest.mark.parametrize("interface", list(ENDPOINTS))
@pytest.mark.parametrize("text", ["", "   \n\t"])
async def test_a_message_without_text_is_refused_everywhere(server: InProcess, interface: str, text: str) -> None:
    """An empty or blank message starts nothing, whichever interface it comes through."""
    path, body = ENDPOINTS[interface]
    async with server.client() as client:
        response = await client.post(path, json=body(text), headers={"A2A-Version": "1.0"})
        if interface == "rest":
            assert response.status_code in (400, 422)
            assert "message" in response.text
        elif interface == "a2a":
            assert response.json()["error"]["code"] == -32602
        else:
            assert "RUN_ERROR" in response.text
        assert (await client.get("/v1/threads")).json()["threads"] == []


@pytest.mark.parametrize("interface", list(ENDPOINTS))
@pytest.mark.parametrize("odd", ["\ud800", "\x00"], ids=["lone-surrogate", "nul"])
async def test_a_message_holding_text_no_store_keeps_is_refused(server: InProcess, interface: str, odd: str) -> None:
    """JSON may escape half a surrogate pair, or a NUL character, which PostgreSQL cannot store: either is refused as
    the client's mistake, on every store alike (on PostgreSQL a NUL was a 503 naming the database's error)."""
    path, body = ENDPOINTS[interface]
    raw = json.dumps(body(f"delete {odd} now"))  # json.dumps keeps them as the escapes \ud800 and \u0000
    async with server.client() as client:
        response = await client.post(
            path, content=raw, headers={"A2A-Version": "1.0", "Content-Type": "application/json"}
        )
        if interface == "a2a":
            assert response.json()["error"]["code"] == -32602
        elif interface == "ag-ui" and odd == "\x00":  # AG-UI's input model takes it; the runtime refuses the run
            assert '"code":"invalid_input"' in response.text and "NUL character" in response.text
        else:
            assert response.status_code == 422, response.text
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_a_blank_message_from_python_starts_nothing(server: InProcess) -> None:
    """`Sayso.run` refuses white space, and text that is not Unicode, as the edges do, naming the message."""
    with pytest.raises(InvalidInput, match="the message is empty"):
        await server.sayso.run("  ")
    with pytest.raises(InvalidInput, match="lone surrogate"):
        await server.sayso.run("delete \ud800 now")
    with pytest.raises(InvalidInput, match="NUL character"):
        await server.sayso.run("delete \x00 now")
    async with server.client() as client:
        assert (await client.get("/v1/threads")).json()["threads"] == []


async def test_edits_and_answers_over_the_limit_are_refused_and_the_request_stays_open(server: InProcess) -> None:
    """Edited arguments over `limits.argument_bytes`, over REST, A2A or AG-UI, are refused; the request stays open."""
    async with server.client() as client:
        paused = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = paused["requests"][0]["id"]
        edit = {"kind": "approve", "edited_args": {"name": "notes.txt", "pad": "x" * 600}}
        refused = await client.post(f"/v1/requests/{request_id}/decision", json=edit)
        assert (refused.status_code, refused.json()["errors"][0]["loc"]) == (413, ["edited_args"])
        payload = {"status": "approved", "tool_input": {"name": "notes.txt", "pad": "x" * 600}}
        entry = [{"interruptId": request_id, "status": "resolved", "payload": payload}]
        resume = {**ag_ui_call(), "threadId": paused["thread_id"], "messages": [], "resume": entry}
        ag_ui = await client.post("/ag-ui/files", json=resume)
        assert '"code":"too_large"' in ag_ui.text
        state = (await client.get(f"/v1/requests/{request_id}")).json()
    assert state["status"] == "open"


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_racing_force_resumes_and_decisions_answer_only_sayso_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """Force-resumes and decisions of one pause racing from two servers on one store: every answer is 200 or a
    409 problem (never a database error or a 500), and each approved call runs at most once."""
    from ..store.conftest import DSN, postgres_database

    if backend == "postgres" and DSN is None:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    monkeypatch.setenv("SAYSO_SANDBOX", str(tmp_path / "sandbox"))
    async with postgres_database() if backend == "postgres" else _sqlite(tmp_path) as url:
        monkeypatch.setenv("SAYSO_STORE", url)
        servers = [await _serve(model=two_deletes()) for _ in range(2)]
        statuses: list[int] = []
        try:
            for _ in range(6):
                (tmp_path / "sandbox").mkdir(exist_ok=True)
                for name in ("notes.txt", "todo.md"):
                    (tmp_path / "sandbox" / name).write_text("x\n")
                statuses += await _race_one_pause(servers)
            async with servers[0].client() as client:
                records = (await client.get("/v1/audit", params={"limit": 500})).json()["records"]
        finally:
            for served in servers:
                await served.stop()
    assert set(statuses) <= {200, 409}, statuses
    executed = [r["body"]["request_id"] for r in records if r["body"]["event"] == "executed"]
    assert len(executed) == len(set(executed))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_what_postgresql_cannot_hold_is_the_clients_mistake_on_every_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    """PostgreSQL can neither store nor look up a NUL character: an id or an agent filter holding one was a 503 naming
    the database's error there (a 404 or a 200 on SQLite), and a reason holding one left the run `running` for good;
    an audit cursor past a 32-bit integer (the records' `seq`) was a 503 too. Every store now answers a 422 naming the
    parameter, and the pause is still there to decide."""
    from ..store.conftest import DSN, postgres_database

    if backend == "postgres" and DSN is None:
        missing("TEST_POSTGRES_DSN is not set (scripts/test sets it)")
    monkeypatch.setenv("SAYSO_SANDBOX", str(tmp_path / "sandbox"))
    async with postgres_database() if backend == "postgres" else _sqlite(tmp_path) as url:
        monkeypatch.setenv("SAYSO_STORE", url)
        served = await _serve()
        try:
            async with served.client() as client:
                paused = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
                reason = await client.post(
                    f"/v1/requests/{paused['requests'][0]['id']}/decision", json={"kind": "reject", "reason": "\x00"}
                )
                refused = [
                    ("run_id", await client.get("/v1/runs/run_%00")),
                    ("run_id", await client.post("/v1/runs/run_%00/resume", json={"force": True})),
                    ("request_id", await client.get("/v1/requests/req_%00")),
                    ("request_id", await client.post("/v1/requests/req_%00/decision", json={"kind": "skip"})),
                    ("grant_id", await client.delete("/v1/grants/grt_%00")),
                    ("agent", await client.get("/v1/requests", params={"agent": "files\x00"})),
                    ("cursor", await client.get("/v1/audit", params={"cursor": 2**31})),
                ]
                run = (await client.get(f"/v1/runs/{paused['run_id']}")).json()
                newest = await client.get("/v1/audit", params={"cursor": 2**31 - 1, "order": "desc"})
                get_task = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "run_\x00"}}
                task = await client.post("/a2a/files", json=get_task, headers={"A2A-Version": "1.0"})
        finally:
            await served.stop()
    assert (reason.status_code, run["status"], len(run["requests"])) == (422, "paused", 1)
    assert newest.status_code == 200, newest.text  # the largest cursor still pages from the newest record
    assert task.json()["error"]["code"] == -32001, task.text  # A2A's TaskNotFound, not an internal error
    for name, response in refused:
        assert (response.status_code, response.headers["content-type"]) == (422, "application/problem+json")
        assert [e["loc"][-1] for e in response.json()["errors"]] == [name]


async def _race_one_pause(servers: list[InProcess]) -> list[int]:
    async with servers[0].client() as client:
        paused = (await client.post("/v1/runs", json={"message": "delete both"})).json()
    assert paused["status"] == "paused" and len(paused["requests"]) == 2
    first, second = (r["id"] for r in paused["requests"])
    calls: list[tuple[int, str, dict[str, Any]]] = [
        (0, f"/v1/runs/{paused['run_id']}/resume", {"force": True}),
        (1, f"/v1/runs/{paused['run_id']}/resume", {"force": True}),
        (0, f"/v1/requests/{first}/decision", {"kind": "approve"}),
        (1, f"/v1/requests/{second}/decision", {"kind": "reject"}),
        (1, f"/v1/runs/{paused['run_id']}/resume", {"force": True}),
        (0, f"/v1/requests/{second}/decision", {"kind": "approve"}),
    ]
    statuses: list[int] = []

    async def call(index: int, path: str, body: dict[str, Any]) -> None:
        async with servers[index].client() as client:
            response = await client.post(path, json=body)
            if response.status_code != 200:
                assert response.headers["content-type"] == "application/problem+json", response.text
            statuses.append(response.status_code)

    async with anyio.create_task_group() as tg:
        for index, path, body in calls:
            tg.start_soon(call, index, path, body)
    return statuses


class _sqlite:
    """A SQLite store URL in the test's folder (the same shape as `postgres_database`)."""

    def __init__(self, folder: Path) -> None:
        self.url = f"sqlite:///{folder / 'race.db'}"

    async def __aenter__(self) -> str:
        return self.url

    async def __aexit__(self, *exc: object) -> None:
        return None
