"""The REST surface a newcomer meets: named operations with their own errors, RFC 3339 times, decisions that
say who and through what, thread titles, and `/docs` and the favicon served without any CDN."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from sayso import Config, Sayso
from sayso._serve import compose

from .conftest import InProcess

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def seconds(rfc3339: str) -> float:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


async def test_each_operation_has_a_name_and_only_the_errors_it_can_answer(server: InProcess) -> None:
    """operationIds are plain verbs, and each endpoint documents the problems it can really return: its own, and the
    edge guard's (400 on every path, 413 and 415 on writes)."""
    async with server.client() as client:
        document = (await client.get("/openapi.json")).json()
    operations = {
        op["operationId"]: {status for status in op["responses"] if status != "200" and status != "201"}
        for path, item in document["paths"].items()
        for op in item.values()
    }
    assert {
        "get_me",
        "list_agents",
        "create_thread",
        "list_threads",
        "get_thread",
        "create_run",
        "get_run",
        "resume_run",
        "list_requests",
        "get_request",
        "decide_request",
        "list_grants",
        "revoke_grant",
        "list_audit_records",
        "verify_audit",
        "expire_requests",
        "watch_changes",
        "check_health",
    } <= set(operations)
    assert not [name for name in operations if "_v1_" in name or name.endswith(("_get", "_post", "_delete"))]
    assert operations["decide_request"] == {"400", "401", "403", "404", "409", "410", "413", "415", "422", "503"}
    assert operations["get_me"] == {"400", "401", "422"}  # 422: a query parameter it does not take
    assert operations["list_grants"] == {"400", "401", "422", "503"}
    assert operations["check_health"] == {"400", "503"}
    decide = document["paths"]["/v1/requests/{request_id}/decision"]["post"]
    assert "application/problem+json" in decide["responses"]["409"]["content"]
    request_schema = document["components"]["schemas"]["RequestOut"]["properties"]
    assert request_schema["created"]["format"] == "date-time"
    assert request_schema["created_at"]["deprecated"] is True


async def test_docs_and_the_favicon_are_served_from_the_server_itself(server: InProcess) -> None:
    """`/docs` loads Swagger UI's files from this server (nothing from a CDN, no inline script), and the favicon
    is there."""
    async with server.client() as client:
        docs = await client.get("/docs")
        assets = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
        fetched = {asset: await client.get(asset) for asset in assets}
        icon = await client.get("/favicon.ico")
        page = (await client.get("/")).text
    assert docs.status_code == 200 and "swagger-ui-bundle.js" in docs.text
    assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", docs.text) == []
    assert assets and all(asset.startswith("/") for asset in assets), assets
    assert all(response.status_code == 200 for response in fetched.values())
    assert (icon.status_code, icon.headers["content-type"]) == (200, "image/svg+xml")
    assert 'rel="icon"' in page


async def test_times_are_rfc3339_and_a_decision_says_who_took_it_and_where(server: InProcess) -> None:
    """Requests, threads, grants and transcript lines carry RFC 3339 times (the old epoch fields agree), and a
    decision from the web UI is recorded as such, with the thread titled by its first message."""
    async with server.client() as client:
        run = (await client.post("/v1/runs", json={"message": "delete notes"})).json()
        request = run["requests"][0]
        assert RFC3339.match(request["created"]) and abs(seconds(request["created"]) - request["created_at"]) < 0.001
        decision = {"kind": "approve", "scope": "thread", "edited_args": {"name": "todo.md"}}
        web = {"Sayso-Via": "web"}
        decided = await client.post(f"/v1/requests/{request['id']}/decision", json=decision, headers=web)
        assert decided.status_code == 200, decided.text
        state = (await client.get(f"/v1/requests/{request['id']}")).json()
        thread = (await client.get(f"/v1/threads/{run['thread_id']}")).json()
        grant = (await client.get("/v1/grants")).json()["grants"][0]
        listed = (await client.get("/v1/threads")).json()["threads"][0]
    assert (state["via"], state["principal"], state["status"]) == ("web", "local", "decided")
    assert RFC3339.match(state["decided"])
    assert (thread["title"], listed["title"]) == ("delete notes", "delete notes")
    assert RFC3339.match(thread["created"]) and RFC3339.match(listed["created"])
    assert RFC3339.match(grant["created"]) and grant["expires"] is None
    [line] = [e for e in thread["transcript"] if e["role"] == "decision"]
    assert (line["decision"]["decision"], line["decision"]["scope"], line["decision"]["via"]) == (
        "approve",
        "thread",
        "web",
    )
    assert line["decision"]["edits"] == [{"field": "name", "before": "notes.txt", "after": "todo.md"}]
    assert RFC3339.match(line["at"]) and RFC3339.match(line["decision"]["decided"])
    assert all(e["at"] is None or RFC3339.match(e["at"]) for e in thread["transcript"])


def _api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    """Every API route of an app, inside the routers it includes (FastAPI keeps those as routes of their own)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _api_routes(included.routes)


def _blocking_calls(dependant: Dependant) -> Iterator[str]:
    """The endpoint and dependencies of a route that are plain functions (FastAPI runs those in worker threads)."""
    call = dependant.call
    if call is not None and not (inspect.iscoroutinefunction(call) or inspect.iscoroutinefunction(type(call).__call__)):
        yield getattr(call, "__qualname__", repr(call))
    for dependency in dependant.dependencies:
        yield from _blocking_calls(dependency)


def test_no_endpoint_or_dependency_runs_in_a_worker_thread(example_config: Config) -> None:
    """A plain `def` endpoint or dependency runs in FastAPI's thread pool: a hop out of the event loop and back for
    every request, which cost more CPU than the rest of a small GET (bench/ANALYSIS.md); each is `async def`."""
    app = compose(Sayso(example_config), expire_every_seconds=None, recover_every_seconds=None)
    routes = list(_api_routes(app.routes))
    assert {"/v1/runs", "/v1/requests/{request_id}/decision"} <= {route.path for route in routes}
    assert {route.path: list(_blocking_calls(route.dependant)) for route in routes} == {
        route.path: [] for route in routes
    }


async def test_a_query_parameter_an_endpoint_does_not_take_is_a_422_naming_it(server: InProcess) -> None:
    """A misspelt filter (`stauts=open`) was ignored, and the whole inbox came back as if it had been applied; every
    /v1 endpoint now refuses a parameter it does not take, naming it, and still takes those it does."""
    async with server.client() as client:
        await client.post("/v1/runs", json={"message": "delete notes"})
        typo = await client.get("/v1/requests", params={"stauts": "open"})
        me = await client.get("/v1/me", params={"verbose": "1"})
        resume = await client.post("/v1/runs/run_nowhere/resume", params={"froce": "true"}, json={})
        listed = await client.get("/v1/requests", params={"kind": "approval", "limit": "1"})
        threads = await client.get("/v1/threads", params={"limit": "5"})
        stats = await client.get("/v1/stats", params={"window": "1d"})
        health = await client.get("/healthz")
    assert (typo.status_code, typo.headers["content-type"]) == (422, "application/problem+json")
    assert "stauts" in typo.json()["detail"]
    assert typo.json()["errors"][0]["loc"] == ["query", "stauts"]
    assert (me.status_code, me.json()["errors"][0]["loc"]) == (422, ["query", "verbose"])
    assert (resume.status_code, resume.json()["errors"][0]["loc"]) == (422, ["query", "froce"])
    assert (listed.status_code, len(listed.json()["requests"])) == (200, 1)
    assert (threads.status_code, stats.status_code, health.status_code) == (200, 200, 200)
