"""The REST API, in-process: runs, inbox, decisions, resumes and their problem responses."""

from __future__ import annotations

import asyncio
import base64
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from sayso import Config, PrincipalConfig, Sayso, load_config
from sayso._core.requests import DelegateRequest
from sayso.server import create_app

from ..models import Said, answer, calls_then_reply, tool_model, verbs
from ..tools import HOLD, delete_file, hold
from .conftest import InProcess, ServerFactory, helper_models

PROBLEM = "application/problem+json"


async def test_health_and_openapi(server: InProcess) -> None:
    """The server answers its health check and publishes its OpenAPI document."""
    async with server.client() as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        paths = (await client.get("/openapi.json")).json()["paths"]
    assert {"/v1/runs", "/v1/requests", "/v1/requests/{request_id}/decision", "/v1/runs/{run_id}/resume"} <= set(paths)
    assert {"/v1/grants", "/v1/grants/{grant_id}", "/v1/audit", "/v1/audit/verify", "/v1/expire"} <= set(paths)
    assert set(paths["/v1/grants/{grant_id}"]) == {"delete"}


async def test_a_sweep_that_fails_unexpectedly_is_logged_and_the_server_goes_on(
    example_config: Config, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A background sweep meeting an error nobody foresaw (a row that cannot be read, say) logs it and sweeps again
    at its next tick; the server keeps its store open and answers, its health check too."""
    sayso = Sayso(example_config)
    swept = {"recover": 0, "expire": 0}
    again = asyncio.Event()

    async def broken(sweep: str) -> list[Any]:
        swept[sweep] += 1
        if min(swept.values()) >= 2:
            again.set()
        raise ValueError(f"the {sweep} sweep met something it cannot read")

    monkeypatch.setattr(sayso, "recover", lambda: broken("recover"))
    monkeypatch.setattr(sayso, "expire", lambda: broken("expire"))
    app = create_app(sayso, expire_every_seconds=0.01, recover_every_seconds=0.01)
    server = await InProcess(app=app, sayso=sayso).start()
    try:
        await asyncio.wait_for(again.wait(), 30)
        async with server.client() as client:
            health = await client.get("/healthz")
            inbox = await client.get("/v1/requests")
    finally:
        await server.stop()
    assert health.status_code == 200 and inbox.status_code == 200
    assert "the recovery sweep failed" in caplog.text and "the expiry sweep failed" in caplog.text
    assert "cannot read" in caplog.text


async def test_the_openapi_document_asks_for_a_token_only_where_the_server_does(serve: ServerFactory) -> None:
    """Local development mode answers without a token, so its document makes the bearer optional (`{}`); with
    principals the token is required, as a 401 says."""
    local, signed = await serve(), await serve(principals=[ALICE])
    async with local.client() as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert (await client.get("/v1/me")).status_code == 200
    assert paths["/v1/me"]["get"]["security"] == [{}, {"HTTPBearer": []}]
    assert paths["/v1/requests/{request_id}/decision"]["post"]["security"] == [{}, {"HTTPBearer": []}]
    async with signed.client() as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
        assert (await client.get("/v1/me")).status_code == 401
    assert paths["/v1/me"]["get"]["security"] == [{"HTTPBearer": []}]


async def test_every_answer_fits_the_openapi_document(server: InProcess) -> None:
    """What the server sends is what its OpenAPI document says, field for field: every REST test's client checks
    each JSON answer against it (`tests/openapi_check.py`), and a field the document does not name is refused."""
    async with server.client() as client:
        paused = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = paused["requests"][0]["id"]
        await client.get(f"/v1/requests/{request_id}")
        await client.post(f"/v1/requests/{request_id}/decision", json={"kind": "reject", "reason": "no"})
        await client.get(f"/v1/threads/{paused['thread_id']}")
        assert (await client.get("/v1/requests/req_nowhere")).status_code == 404
    assert server.openapi.checked == 5
    schema = server.openapi.schema_for("POST", "/v1/runs", 200, "application/json")
    assert schema is not None
    assert Draft202012Validator(schema).is_valid(paused)
    assert not Draft202012Validator(schema).is_valid({**paused, "undocumented": True})
    assert not Draft202012Validator(schema).is_valid({**paused, "requests": [{**paused["requests"][0], "kind": "x"}]})


async def test_run_pauses_and_a_decision_resumes_it(server: InProcess, workdir: Path) -> None:
    """A question then an approval, each decided over REST, carry the run to completion."""
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete report"})).json()
        assert run["status"] == "paused"
        [question] = run["requests"]
        assert question["kind"] == "question"
        assert question["questions"][0]["choices"] == ["report-2025.txt", "report-2026.txt"]
        answer = {"kind": "answer", "answers": [["report-2025.txt"]]}
        answered = (await client.post(f"/v1/requests/{question['id']}/decision", json=answer)).json()
        assert answered["recorded"] is True
        [approval] = answered["run"]["requests"]
        assert (approval["kind"], approval["args"], approval["scopes"], approval["editable"]) == (
            "approval",
            {"name": "report-2025.txt"},
            ["once", "thread", "always"],
            True,
        )
        done = (await client.post(f"/v1/requests/{approval['id']}/decision", json={"kind": "approve"})).json()
        assert done["run"]["status"] == "completed"
        assert done["run"]["output"] == "Deleted report-2025.txt."
        state = (await client.get(f"/v1/requests/{approval['id']}")).json()
        assert (state["status"], state["decision"]["kind"], state["decided_by"]) == ("decided", "approve", "person")
        thread = (await client.get(f"/v1/threads/{run['thread_id']}")).json()
    assert thread["active_run"] is None
    assert [e["role"] for e in thread["transcript"]][0] == "user"
    assert not (workdir / "sandbox" / "report-2025.txt").exists()


async def test_decision_errors_are_problems(server: InProcess) -> None:
    """Unknown ids are 404, invalid answers 422 (the pause stays open), a different second decision 409."""
    async with server.client() as client:
        missing = await client.post("/v1/requests/req_nope/decision", json={"kind": "skip"})
        assert (missing.status_code, missing.headers["content-type"]) == (404, PROBLEM)
        assert missing.json()["type"].endswith("/not-found")
        run = (await client.post("/v1/runs", json={"message": "delete report"})).json()
        decision = f"/v1/requests/{run['requests'][0]['id']}/decision"
        invalid = await client.post(decision, json={"kind": "answer", "answers": [["a", "b"]]})
        assert invalid.status_code == 422
        assert set(invalid.json()) >= {"type", "title", "status", "detail"}
        assert "takes one answer" in invalid.json()["detail"]
        wrong_kind = await client.post(decision, json={"kind": "approve"})
        assert wrong_kind.status_code == 422
        assert (await client.get(f"/v1/requests/{run['requests'][0]['id']}")).json()["status"] == "open"
        first = await client.post(decision, json={"kind": "skip", "reason": "later"})
        assert first.status_code == 200
        again = await client.post(decision, json={"kind": "skip", "reason": "later"})
        assert (again.status_code, again.json()["recorded"]) == (200, False)
        other = await client.post(decision, json={"kind": "answer", "answers": [["x"]]})
        assert (other.status_code, other.json()["type"]) == (409, "https://sayso.dev/problems/already-decided")
        malformed = await client.post(decision, json={"kind": "maybe"})
        assert (malformed.status_code, malformed.headers["content-type"]) == (422, PROBLEM)
        kinds: list[object] = [{}, ["skip"]]  # not a string: was a 500 (the legacy-tag lookup hashed it)
        for kind in kinds:
            odd = await client.post(decision, json={"kind": kind})
            assert (odd.status_code, odd.headers["content-type"]) == (422, PROBLEM)
            assert [e["loc"] for e in odd.json()["errors"]] == [["body"]]
        assert (await client.get("/v1/runs/run_nope")).status_code == 404


async def test_a_method_a_path_does_not_take_is_a_405_naming_the_methods_it_takes(server: InProcess) -> None:
    """RFC 9110: a 405 says in `Allow` which methods the path takes; the problem document names them too."""
    async with server.client() as client:
        refused = await client.put("/v1/runs/run_nope", json={})
        deleted = await client.delete("/v1/me")
        both = await client.put("/v1/threads", json={})  # two routes, one per method: Starlette named the first's
    assert (refused.status_code, refused.headers["content-type"]) == (405, PROBLEM)
    assert refused.headers["allow"] == "GET"
    assert refused.json()["detail"] == "this path takes GET only"
    assert (deleted.status_code, deleted.headers["allow"]) == (405, "GET")
    assert (both.status_code, both.headers["allow"], both.json()["detail"]) == (
        405,
        "GET, POST",
        "this path takes GET, POST only",
    )


async def test_a_result_with_nan_is_refused_and_the_request_stays_open(
    serve: ServerFactory, helper_config: Config
) -> None:
    """`NaN` and `Infinity` are not JSON: a client tool's result carrying them is a 400 naming them, instead of the
    agent reading `NaN` while the stored decision says `null`; the request waits for a result that is JSON."""
    server = await serve(config=helper_config, models=helper_models())
    tool = {"name": "get_location", "description": "Where the person is", "parameters": {"type": "object"}}
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "locate", "client_tools": [tool]})).json()
        decision = f"/v1/requests/{run['requests'][0]['id']}/decision"
        headers = {"Content-Type": "application/json"}
        for value, named in ((b"NaN", "NaN is not a JSON number"), (b"1e999", "1e999 is too large for a number")):
            body = b'{"kind": "client_result", "value": {"lat": ' + value + b"}}"
            refused = await client.post(decision, content=body, headers=headers)
            assert (refused.status_code, refused.headers["content-type"]) == (400, PROBLEM)
            assert named in refused.json()["detail"]
        assert (await client.get(f"/v1/requests/{run['requests'][0]['id']}")).json()["status"] == "open"
        done = await client.post(decision, json={"kind": "client_result", "value": {"lat": 45.7}})
        assert done.json()["run"]["output"] == 'You are at {"lat": 45.7}'


async def test_a_decision_holding_a_nul_character_is_refused_and_the_request_stays_open(server: InProcess) -> None:
    """PostgreSQL cannot store a NUL character: a reason holding one was a 503 naming the database's error there,
    after the decision was recorded, and the run stayed `running` for good. Refused before anything is recorded, on
    every store, naming the field; the request takes a good decision after it."""
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = run["requests"][0]["id"]
        decision = f"/v1/requests/{request_id}/decision"
        refused = await client.post(decision, json={"kind": "reject", "reason": "no\x00"})
        assert (refused.status_code, refused.headers["content-type"]) == (422, PROBLEM)
        assert (refused.json()["type"], refused.json()["request_id"]) == (
            "https://sayso.dev/problems/invalid-decision",
            request_id,
        )
        assert "reason: the text holds a NUL character (U+0000)" in refused.json()["detail"]
        edited = await client.post(decision, json={"kind": "approve", "edited_args": {"name": "no\x00tes"}})
        assert "edited_args.name: the text holds a NUL character" in edited.json()["detail"]
        assert (await client.get(f"/v1/requests/{request_id}")).json()["status"] == "open"
        decided = await client.post(decision, json={"kind": "reject", "reason": "no"})
    assert decided.json()["run"]["output"] == "Declined: no"


async def test_forced_resume_skips_open_requests(server: InProcess, workdir: Path) -> None:
    """A resume refuses while requests are open (409) unless forced; forced, they count as skipped."""
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        not_ready = await client.post(f"/v1/runs/{run['run_id']}/resume", json={"force": False})
        assert (not_ready.status_code, not_ready.json()["type"]) == (409, "https://sayso.dev/problems/not-ready")
        forced = (await client.post(f"/v1/runs/{run['run_id']}/resume", json={"force": True})).json()
        assert forced["status"] == "completed"
        assert forced["output"].startswith("Skipped:")
        consumed = await client.post(f"/v1/runs/{run['run_id']}/resume", json={"force": True})
        assert consumed.status_code == 409
        late = await client.post(f"/v1/requests/{run['requests'][0]['id']}/decision", json={"kind": "approve"})
        assert late.status_code == 409
    assert (workdir / "sandbox" / "notes.txt").exists()


async def test_inbox_filters_and_pages(serve: ServerFactory, helper_config: Config) -> None:
    """The inbox filters by kind, thread, agent and age, and pages with an opaque cursor."""
    server = await serve(config=helper_config, models=helper_models())
    async with server.client() as client:

        async def inbox(**params: Any) -> dict[str, Any]:
            body: dict[str, Any] = (await client.get("/v1/requests", params=params)).json()
            return body

        runs = [(await client.post("/v1/runs", json={"message": "survey"})).json() for _ in range(3)]
        ids = [r["requests"][0]["id"] for r in runs]
        page = await inbox(limit=2)
        assert [r["id"] for r in page["requests"]] == ids[:2]
        rest = await inbox(limit=2, cursor=page["next_cursor"])
        assert ([r["id"] for r in rest["requests"]], rest["next_cursor"]) == (ids[2:], None)
        by_thread = (await inbox(thread_id=runs[1]["thread_id"]))["requests"]
        assert [r["id"] for r in by_thread] == [ids[1]]
        assert (await inbox(kind="approval"))["requests"] == []
        assert len((await inbox(agent="helper"))["requests"]) == 3
        assert (await inbox(agent="other"))["requests"] == []
        assert (await inbox(older_than=3600))["requests"] == []
        assert len((await inbox(newer_than=3600))["requests"]) == 3
        nan = await client.get("/v1/requests", params={"older_than": "nan"})  # was "less than or equal to 1e10"
        assert nan.json()["errors"] == [{"loc": ["query", "older_than"], "msg": "Input should be a finite number"}]
        # Not a cursor; one made by hand with NaN, or a NUL in its id (a 503 on PostgreSQL): none a store made.
        # Nor is a cursor of another listing: the thread list's, handed to the inbox (and the inbox's to the threads).
        threads = (await client.get("/v1/threads", params={"limit": 1})).json()["next_cursor"]
        assert threads is not None
        for raw in ("not-a-cursor", _cursor('[NaN, "req_x"]'), _cursor('[1.0, "req_\\u0000"]'), threads):
            bad = await client.get("/v1/requests", params={"cursor": raw})
            assert (bad.status_code, bad.headers["content-type"]) == (422, PROBLEM)
            assert "is not a cursor sayso handed out" in bad.json()["detail"]
        assert (await client.get("/v1/threads", params={"cursor": page["next_cursor"]})).status_code == 422


async def test_the_inbox_counts_every_open_request_not_just_the_page(
    serve: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """250 requests open for alice: a page holds at most 200, and every page's `total` says 250 (a badge reading
    one page said 200); bob sees none of them, an approver of their agent all of them, a filter counts its own."""
    monkeypatch.setenv("OPS_TOKEN", "ops-token")
    many = calls_then_reply(*[("delete_file", {"name": f"f{n}.txt"}) for n in range(250)], reply="done")
    server = await serve(principals=[ALICE, BOB, OPS], models={"demo": many})
    alice, bob, ops = server.client("alice-token"), server.client("bob-token"), server.client("ops-token")
    async with alice, bob, ops:
        assert len((await alice.post("/v1/runs", json={"message": "delete them"})).json()["requests"]) == 250
        first = (await alice.get("/v1/requests", params={"limit": 200})).json()
        rest = (await alice.get("/v1/requests", params={"limit": 200, "cursor": first["next_cursor"]})).json()
        assert (len(first["requests"]), first["total"]) == (200, 250)
        assert (len(rest["requests"]), rest["total"], rest["next_cursor"]) == (50, 250, None)
        assert (await bob.get("/v1/requests")).json() == {"requests": [], "next_cursor": None, "total": 0}
        assert (await ops.get("/v1/requests", params={"limit": 1})).json()["total"] == 250
        assert (await alice.get("/v1/requests", params={"kind": "question"})).json()["total"] == 0


async def test_threads_page_newest_first_with_a_cursor(serve: ServerFactory) -> None:
    """`GET /v1/threads` pages as `/v1/requests` does: newest first, each thread once even when one starts between
    two pages, `next_cursor` null on the last page; a cursor sayso did not hand out is a 422 problem."""
    server = await serve(principals=[ALICE, BOB])
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        started = [(await alice.post("/v1/runs", json={"message": f"list {n}"})).json()["thread_id"] for n in range(5)]
        seen: list[str] = []
        page = (await alice.get("/v1/threads", params={"limit": 2})).json()
        await alice.post("/v1/runs", json={"message": "list later"})
        while True:
            seen += [t["thread_id"] for t in page["threads"]]
            if page["next_cursor"] is None:
                break
            page = (await alice.get("/v1/threads", params={"limit": 2, "cursor": page["next_cursor"]})).json()
        assert seen == started[::-1]
        assert (await bob.get("/v1/threads")).json() == {"threads": [], "next_cursor": None}
        for raw in ("not-a-cursor", _cursor('[NaN, "thr_x"]'), _cursor('[1.0, "thr_\\u0000"]')):
            bad = await alice.get("/v1/threads", params={"cursor": raw})
            assert (bad.status_code, bad.headers["content-type"]) == (422, PROBLEM)
            assert "is not a cursor sayso handed out" in bad.json()["detail"]
        assert (await alice.get("/v1/threads", params={"limit": 1000})).status_code == 422


async def test_a_long_thread_reads_its_newest_lines_first_and_pages_back(serve: ServerFactory) -> None:
    """`GET /v1/threads/{id}` answered the whole history however long the thread; it answers the newest lines (200
    unless `limit` says), titled by the first message still, and `next_cursor` reads back to the first line."""
    server = await serve(models={"demo": answer("hello")})
    async with server.client() as client:
        thread_id = (await client.post("/v1/runs", json={"message": "chat 0"})).json()["thread_id"]
        for n in range(1, 105):
            await client.post("/v1/runs", json={"thread_id": thread_id, "message": f"chat {n}"})
        path = f"/v1/threads/{thread_id}"
        newest = (await client.get(path)).json()
        lines: list[dict[str, Any]] = []
        page = (await client.get(path, params={"limit": 7})).json()
        while True:
            assert len(page["transcript"]) <= 7
            lines = page["transcript"] + lines
            if page["next_cursor"] is None:
                break
            page = (await client.get(path, params={"limit": 7, "cursor": page["next_cursor"]})).json()
        bad = await client.get(path, params={"cursor": _cursor("[1, -1]")})
        too_many = await client.get(path, params={"limit": 501})
    assert (len(newest["transcript"]), newest["title"], newest["next_cursor"] is not None) == (200, "chat 0", True)
    assert [e["text"] for e in newest["transcript"][:2]] == ["chat 5", "hello"]
    assert newest["transcript"][-1]["text"] == "hello"
    assert [e["text"] for e in lines] == [text for n in range(105) for text in (f"chat {n}", "hello")]
    assert (bad.status_code, bad.headers["content-type"]) == (422, PROBLEM)
    assert "is not a cursor sayso handed out" in bad.json()["detail"]
    assert too_many.status_code == 422


async def test_a_transcript_cursor_pages_only_the_thread_it_came_from(serve: ServerFactory) -> None:
    """A transcript cursor of thread A, handed to thread B, paged B from A's position; it is refused, naming it."""
    server = await serve(models={"demo": answer("hello")})
    async with server.client() as client:
        threads = []
        for name in ("a", "b"):
            thread_id = (await client.post("/v1/runs", json={"message": f"{name} 0"})).json()["thread_id"]
            for n in range(1, 4):
                await client.post("/v1/runs", json={"thread_id": thread_id, "message": f"{name} {n}"})
            threads.append(thread_id)
        a, b = (f"/v1/threads/{t}" for t in threads)
        cursor = (await client.get(a, params={"limit": 2})).json()["next_cursor"]
        own = (await client.get(a, params={"limit": 2, "cursor": cursor})).json()
        foreign = await client.get(b, params={"limit": 2, "cursor": cursor})
    assert [e["text"] for e in own["transcript"]] == ["a 2", "hello"]
    assert (foreign.status_code, foreign.headers["content-type"]) == (422, PROBLEM)
    assert cursor in foreign.json()["detail"] and "another thread" in foreign.json()["detail"]


def _cursor(raw: str) -> str:
    """An inbox cursor made by hand: base64url of JSON, as the store makes them."""
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


async def test_streamed_run_reports_tool_calls_text_and_the_pause(server: InProcess) -> None:
    """With stream=true the run arrives as server-sent events ending with the whole result."""
    async with server.client() as client:
        async with client.stream("POST", "/v1/runs", params={"stream": "true"}, json={"message": "list"}) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = await _events(response.aiter_lines())
        names = [name for name, _ in events]
        assert names[0] == "status" and names[-1] == "run"
        assert ("tool_call", "list_files") in [(n, d.get("tool_name")) for n, d in events]
        text = "".join(str(d["delta"]) for n, d in events if n == "text_delta")
        assert text == events[-1][1]["output"] and text.startswith("Files in the sandbox:")
        async with client.stream("POST", "/v1/runs?stream=true", json={"message": "delete notes"}) as response:
            events = await _events(response.aiter_lines())
        requests = [d for n, d in events if n == "request"]
        assert [r["tool_name"] for r in requests] == ["delete_file"]
        assert events[-1][1]["status"] == "paused"
        thread_id = str(events[-1][1]["thread_id"])
        body = {"message": "x", "agent": "nobody"}
        refused = await client.post("/v1/runs?stream=true", json=body)
        assert (refused.status_code, refused.headers["content-type"]) == (422, PROBLEM)
        assert "nobody" in refused.json()["detail"]
    assert thread_id.startswith("thr_")
    assert events[0] == ("status", {**events[0][1], "thread_id": thread_id, "status": "running"})
    assert events[0][1]["run_id"] == events[-1][1]["run_id"]


async def test_a_streamed_message_the_runtime_refuses_gets_its_status_not_a_200_stream(serve: ServerFactory) -> None:
    """Another principal's thread is a 403 problem with streaming as without; its owner's message streams."""
    server = await serve(principals=[ALICE, BOB])
    async with server.client("alice-token") as alice, server.client("bob-token") as bob:
        paused = (await alice.post("/v1/runs", json={"message": "delete notes"})).json()
        thread = {"thread_id": paused["thread_id"]}
        foreign = await bob.post("/v1/runs?stream=true", json={"message": "list", **thread})
        assert (foreign.status_code, foreign.headers["content-type"]) == (403, PROBLEM)
        async with alice.stream("POST", "/v1/runs?stream=true", json={"message": "list", **thread}) as taken:
            assert taken.status_code == 200
            events = await _events(taken.aiter_lines())
        assert events[0][0] == "status" and events[0][1]["thread_id"] == paused["thread_id"]
        assert events[-1][1]["status"] == "completed"


async def _events(lines: object) -> list[tuple[str, dict[str, object]]]:
    events: list[tuple[str, dict[str, object]]] = []
    name = ""
    async for line in lines:  # type: ignore[attr-defined]
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            events.append((name, json.loads(line[6:])))
    return events


ALICE = PrincipalConfig(name="alice", token="alice-token")
BOB = PrincipalConfig(name="bob", token="bob-token")
OPS = PrincipalConfig(name="ops", token_env="OPS_TOKEN", approver_for=["fil*"])


async def test_principals_need_tokens_and_own_their_threads(
    serve: ServerFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a valid token: 401; another principal's request: hidden, and deciding it a 404 as for a made-up id; an
    approver may decide."""
    monkeypatch.setenv("OPS_TOKEN", "ops-token")
    server = await serve(principals=[ALICE, BOB, OPS])
    async with server.client() as anonymous, server.client("wrong") as wrong:
        for response in (await anonymous.get("/v1/requests"), await wrong.post("/v1/runs", json={"message": "list"})):
            assert (response.status_code, response.headers["content-type"]) == (401, PROBLEM)
            assert response.headers["www-authenticate"].startswith("Bearer")
        assert (await anonymous.get("/healthz")).status_code == 200
    alice, bob, ops = server.client("alice-token"), server.client("bob-token"), server.client("ops-token")
    async with alice, bob, ops:
        assert (await alice.get("/v1/me")).json() == {"principal": "alice", "local_mode": False, "approver_for": []}
        run = (await alice.post("/v1/runs", json={"message": "delete notes"})).json()
        request_id = run["requests"][0]["id"]
        assert (await bob.get("/v1/requests")).json()["requests"] == []
        refused = await bob.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"})
        assert (refused.status_code, refused.json()["type"]) == (404, "https://sayso.dev/problems/not-found")
        # Another principal's request, run and thread look the same as none at all.
        assert (await bob.get(f"/v1/runs/{run['run_id']}")).status_code == 404
        assert (await bob.get(f"/v1/threads/{run['thread_id']}")).status_code == 404
        sent = await bob.post("/v1/runs", json={"message": "hi", "thread_id": run["thread_id"]})
        assert sent.status_code == 403
        assert (await alice.get(f"/v1/requests/{request_id}")).json()["status"] == "open"
        assert [r["id"] for r in (await ops.get("/v1/requests")).json()["requests"]] == [request_id]
        decision = {"kind": "reject", "reason": "no"}
        decided = (await ops.post(f"/v1/requests/{request_id}/decision", json=decision)).json()
        assert decided["run"]["output"] == "Declined: no"
        assert (await alice.get(f"/v1/requests/{request_id}")).json()["principal"] == "ops"
        assert [t["thread_id"] for t in (await alice.get("/v1/threads")).json()["threads"]] == [run["thread_id"]]
        assert (await bob.get("/v1/threads")).json()["threads"] == []


async def test_inbox_lists_a_delegates_requests_with_their_agent_path(serve: ServerFactory) -> None:
    """A nested pause shows its leaf requests in the inbox, never the parent's waiting call itself, each linked to
    the person's chat; a message sent into a delegate's own thread is refused (422) naming that chat."""
    team = load_config(Path(__file__).resolve().parents[2] / "examples" / "team" / "sayso.yaml")
    server = await serve(config=team)
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "report"})).json()
        inbox = (await client.get("/v1/requests")).json()["requests"]
        into_delegate = await client.post("/v1/runs", json={"message": "hi", "thread_id": inbox[0]["thread_id"]})
        still = (await client.get("/v1/requests")).json()["requests"]
    assert run["status"] == "paused"
    assert sorted(r["agent_path"] for r in inbox) == ["coordinator/analyst", "coordinator/ops"]
    assert {r["chat_thread_id"] for r in inbox} == {run["thread_id"]}
    assert all(r["thread_id"] != run["thread_id"] for r in inbox)
    assert into_delegate.status_code == 422 and run["thread_id"] in into_delegate.json()["detail"]
    assert [r["id"] for r in still] == [r["id"] for r in inbox]


async def test_reading_a_delegates_call_by_its_id_is_a_not_found_saying_where_its_requests_are(
    serve: ServerFactory, workdir: Path
) -> None:
    """A delegate's call is no request a person answers (it is no kind the API lists): read by its id, it is a 404
    naming the delegate's run, whose requests are answered instead; it was a 500."""
    team = load_config(Path(__file__).resolve().parents[2] / "examples" / "team" / "sayso.yaml")
    server = await serve(config=team)
    async with server.client() as client:
        await client.post("/v1/runs", json={"message": "report"})
        with sqlite3.connect(workdir / "sayso.db") as db:  # no interface shows these ids; a client may hold one
            calls = dict(db.execute("SELECT request_id, run_id FROM requests WHERE kind = 'delegate'").fetchall())
        read = {request_id: await client.get(f"/v1/requests/{request_id}") for request_id in calls}
    assert len(read) == 2
    for request_id, got in read.items():
        assert got.status_code == 404, got.text
        child = (await server.sayso.request(request_id)).request
        assert isinstance(child, DelegateRequest)
        assert f"a delegate's call, answered through the requests of its run {child.child_run_id!r}" in got.text


async def _working(client: httpx.AsyncClient, thread_id: str, *, after: str | None = None) -> dict[str, Any]:
    """The thread, read once its active run (another than `after`) works."""
    for _ in range(500):
        read = await client.get(f"/v1/threads/{thread_id}")
        active = read.json()["active_run"] if read.status_code == 200 else None
        if active and active["status"] == "running" and active["run_id"] != after:
            return dict(read.json())
        await asyncio.sleep(0.01)
    raise AssertionError(f"no run of {thread_id} started working")


async def test_a_thread_read_while_its_run_works_shows_the_message_once(serve: ServerFactory, workdir: Path) -> None:
    """A reload mid-run shows the person's message, marked pending, until the run stores it; then exactly once; a run
    working again after a decision adds no message of its own."""
    config = Config.model_validate(
        {
            "store": f"sqlite:///{workdir / 'sayso.db'}",
            "agents": {"a": {"model": "m", "tools": [hold, delete_file], "interrupt": {"tools": ["delete_file"]}}},
            "base_dir": workdir,
        }
    )

    def read(tool: str, result: str) -> Said:
        return ("hold", {}) if tool == "delete_file" else f"done: {result}"

    model = tool_model(verbs(wait="hold", delete=("delete_file", "name")), read=read)
    server = await serve(config=config, models={"m": model})
    HOLD.clear()
    try:
        async with server.client() as client:
            thread_id = (await client.post("/v1/threads", json={"agent": "a"})).json()["thread_id"]
            sent = asyncio.create_task(client.post("/v1/runs", json={"message": "wait", "thread_id": thread_id}))
            working = await _working(client, thread_id)
            run_id = working["active_run"]["run_id"]
            assert working["title"] == "wait"
            assert [(e["role"], e["text"], e["run_id"], e.get("pending")) for e in working["transcript"]] == [
                ("user", "wait", run_id, True)
            ]
            HOLD.set()
            assert (await sent).json()["status"] == "completed"
            done = (await client.get(f"/v1/threads/{thread_id}")).json()
            assert [(e["role"], e["text"], e.get("pending")) for e in done["transcript"]] == [
                ("user", "wait", None),
                ("tool_call", None, None),
                ("tool_result", "held until released", None),
                ("assistant", "done: held until released", None),
            ]

            HOLD.clear()
            paused = (await client.post("/v1/runs", json={"message": "delete notes", "thread_id": thread_id})).json()
            request_id = paused["requests"][0]["id"]
            decided = asyncio.create_task(client.post(f"/v1/requests/{request_id}/decision", json={"kind": "approve"}))
            resumed = await _working(client, thread_id)
            assert [e["text"] for e in resumed["transcript"] if e["role"] == "user"] == ["wait", "delete notes"]
            assert not [e for e in resumed["transcript"] if e.get("pending")]
            HOLD.set()
            assert (await decided).json()["run"]["status"] == "completed"
    finally:
        HOLD.set()
