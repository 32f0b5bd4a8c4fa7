"""Who reads a delegate's run and thread over REST (docs/guides/rest.md#who-may-call): whoever sees the chat's run."""

from __future__ import annotations

from pathlib import Path

from sayso import PrincipalConfig, load_config

from .conftest import ServerFactory

TEAM = Path(__file__).resolve().parents[2] / "examples" / "team" / "sayso.yaml"
PRINCIPALS = [
    PrincipalConfig(name="alice", token="alice-token"),
    PrincipalConfig(name="boss", token="boss-token", approver_for=["coordinator"]),
    PrincipalConfig(name="opsy", token="opsy-token", approver_for=["ops"]),
    PrincipalConfig(name="eve", token="eve-token"),
]


async def test_a_delegates_thread_answers_as_its_run_does(serve: ServerFactory) -> None:
    """The owner and an approver of the chat's agent read each delegate's run and thread, while the chat waits and
    after; an approver of the delegate's agent only and a stranger get 404 for both. An approver of the chat's agent
    read the delegate's run but got 404 for its thread."""
    server = await serve(config=load_config(TEAM), principals=PRINCIPALS)
    clients = {p.name: server.client(f"{p.name}-token") for p in PRINCIPALS}
    expected = {"alice": 200, "boss": 200, "opsy": 404, "eve": 404}
    async with clients["alice"], clients["boss"], clients["opsy"], clients["eve"]:
        chat = (await clients["alice"].post("/v1/runs", json={"message": "report"})).json()
        requests = chat["requests"]
        assert sorted(r["agent_path"] for r in requests) == ["coordinator/analyst", "coordinator/ops"]

        async def reads() -> dict[str, list[int]]:
            return {
                who: [
                    (await client.get(path)).status_code
                    for r in requests
                    for path in (f"/v1/runs/{r['run_id']}", f"/v1/threads/{r['thread_id']}")
                ]
                for who, client in clients.items()
            }

        assert await reads() == {who: [status] * 4 for who, status in expected.items()}
        thread = (await clients["boss"].get(f"/v1/threads/{requests[0]['thread_id']}")).json()
        assert thread["owner"] == "alice"
        for r in requests:
            answer = {"kind": "approve"} if r["kind"] == "approval" else {"kind": "answer", "answers": [["last month"]]}
            assert (await clients["boss"].post(f"/v1/requests/{r['id']}/decision", json=answer)).status_code == 200
        assert (await clients["alice"].get(f"/v1/runs/{chat['run_id']}")).json()["status"] == "completed"
        assert await reads() == {who: [status] * 4 for who, status in expected.items()}
