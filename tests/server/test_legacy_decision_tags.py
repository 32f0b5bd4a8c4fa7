"""A client tool's answer is tagged `client_result` / `client_error`, its class's name; older clients and
records say `result` / `error`, and both still read."""

from __future__ import annotations

import json
import sqlite3

from sayso import ClientError, ClientResult, ClientTool, Config, Sayso

from .conftest import ServerFactory, helper_models

TOOLS = [{"name": "get_location", "description": "Where the person is", "parameters": {"type": "object"}}]


async def test_an_older_client_s_result_and_error_tags_are_read_as_today_s(
    serve: ServerFactory, helper_config: Config
) -> None:
    """A decision body with `kind: result` (or `error`) answers the client tool as `client_result` does; the
    request and the OpenAPI document then name the new tag only."""
    helper = await serve(config=helper_config, models=helper_models())
    async with helper.client() as client:
        located = (await client.post("/v1/runs", json={"message": "locate", "client_tools": TOOLS})).json()
        [asked] = located["requests"]
        done = await client.post(f"/v1/requests/{asked['id']}/decision", json={"kind": "result", "value": "Oslo"})
        assert done.status_code == 200, done.text
        assert done.json()["run"]["output"] == "You are at Oslo"
        shown = (await client.get(f"/v1/requests/{asked['id']}")).json()
        assert shown["decision"] == {"kind": "client_result", "value": "Oslo"}

        again = (await client.post("/v1/runs", json={"message": "locate", "client_tools": TOOLS})).json()
        [failed_ask] = again["requests"]
        body = {"kind": "error", "message": "no GPS"}
        failed = await client.post(f"/v1/requests/{failed_ask['id']}/decision", json=body)
        assert failed.status_code == 200, failed.text
        shown = (await client.get(f"/v1/requests/{failed_ask['id']}")).json()
        assert shown["decision"] == {"kind": "client_error", "message": "no GPS"}

        document = json.dumps((await client.get("/openapi.json")).json())
    assert '"client_result"' in document and '"client_error"' in document
    assert '"const": "result"' not in document and '"enum": ["result"]' not in document


async def test_a_decision_stored_under_the_old_tag_still_reads(helper_config: Config) -> None:
    """A store written before the rename (`result` in the decision row and in the call's approval record) reads
    back as a `ClientResult`, the same decision again is the harmless repeat it always was, and the transcript
    names it `client_result`."""
    async with Sayso(helper_config, models=helper_models()) as app:
        tool = ClientTool(name="get_location", description="Where the person is")
        paused = await app.run("locate", agent="helper", client_tools=[tool])
        [asked] = paused.requests
        done = await app.decide(asked.request_id, ClientResult(value="Oslo"))
        assert done.run.status == "completed"
    _write_as_before_the_rename(helper_config)

    async with Sayso(helper_config, models=helper_models()) as app:
        state = await app.request(asked.request_id)
        assert state.decision is not None and state.decision.decision == ClientResult(value="Oslo")
        repeat = await app.decide(asked.request_id, ClientResult(value="Oslo"))
        assert not repeat.recorded
        lines = [e.decision for e in await app.transcript(asked.thread_id) if e.role == "decision"]
    assert [(line or {}).get("decision") for line in lines] == ["client_result"]
    assert ClientError(message="x").kind == "client_error"


def _write_as_before_the_rename(config: Config) -> None:
    """Put the old tag where an older sayso wrote it: the decision row and the call's approval record."""
    path = str(config.store).removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT request_id, body FROM decisions").fetchall()
        assert rows
        for request_id, body in rows:
            old = bytes(body).replace(b'"kind":"client_result"', b'"kind":"result"')
            assert old != bytes(body)
            db.execute("UPDATE decisions SET kind = 'result', body = ? WHERE request_id = ?", (old, request_id))
        records = 0
        for thread_id, seq, body in db.execute("SELECT thread_id, seq, body FROM messages").fetchall():
            old = bytes(body).replace(b'"decision":"client_result"', b'"decision":"result"')
            records += old != bytes(body)
            db.execute("UPDATE messages SET body = ? WHERE thread_id = ? AND seq = ?", (old, thread_id, seq))
        assert records == 1
