"""An escalation step's `add_approvers` widens who decides a routed request (docs/guides/routing.md#escalation).

The refunds example with `after: 1h → add cfo`: before the step dana (cfo) is refused and sees nothing; once
it fires she sees the request in her inbox and her vote counts toward the same quorum; erin, never named, is
still refused. The runtime's clock is the test's, so time moves when the test says so.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from sayso import Sayso, load_config
from sayso.server import create_app

from ..conftest import InProcess
from .conftest import REFUNDS

T0 = 1_900_000_000.0
NAMES = ("alice", "bob", "carol", "dana", "erin")


@pytest.fixture
async def escalating(tmp_path: Path) -> AsyncIterator[tuple[InProcess, list[float]]]:
    for name in ("script.yaml", "refunds_tools.py"):
        shutil.copy(REFUNDS.parent / name, tmp_path / name)
    config = yaml.safe_load(REFUNDS.read_text())
    config["store"] = f"sqlite:///{tmp_path / 'sayso.db'}"
    config["principals"] = [{"name": n, "token": f"{n}-token"} for n in NAMES]
    [rule] = config["agents"]["payments"]["interrupt"]["tools"]
    rule["escalate"] = [{"after": "1h", "add_approvers": ["cfo"]}]
    (tmp_path / "sayso.yaml").write_text(yaml.safe_dump(config))
    loaded = load_config(tmp_path / "sayso.yaml")
    assert [p.name for p in loaded.principals] == list(NAMES)
    now = [T0]
    sayso = Sayso(loaded, clock=lambda: now[0])
    served = await InProcess(app=create_app(sayso, expire_every_seconds=None), sayso=sayso).start()
    yield served, now
    await served.stop()


async def test_the_cfo_added_by_escalation_decides_and_nobody_else_is_let_in(
    escalating: tuple[InProcess, list[float]],
) -> None:
    server, now = escalating
    alice, bob, dana, erin = (server.client(f"{n}-token") for n in ("alice", "bob", "dana", "erin"))
    async with alice, bob, dana, erin:
        run = (await alice.post("/v1/runs", json={"message": "refund 250 to acme"})).json()
        [request] = run["requests"]
        url = f"/v1/requests/{request['id']}/decision"
        early = await dana.post(url, json={"kind": "approve"})
        assert early.status_code == 404  # not hers to see yet: as if there were no such request
        assert (await dana.get("/v1/requests")).json()["requests"] == []

        now[0] = T0 + 3600
        await server.sayso.expire()  # the sweep `sayso serve` runs every few seconds
        [listed] = (await dana.get("/v1/requests")).json()["requests"]
        assert listed["id"] == request["id"]
        assert listed["approvers"]["named"] == ["finance", "cfo"]
        assert [p["name"] for p in listed["approvers"]["principals"]] == ["bob", "carol", "dana"]
        assert listed["quorum"]["text"] == "0 of 2, waiting for finance, cfo"

        outsider = await erin.post(url, json={"kind": "approve"})
        assert outsider.status_code == 404 and "cfo" not in outsider.text
        voted = (await dana.post(url, json={"kind": "approve"})).json()
        assert voted["recorded"] is True and voted["quorum"]["text"] == "1 of 2, waiting for finance"
        done = (await bob.post(url, json={"kind": "approve"})).json()
        state = (await dana.get(f"/v1/requests/{request['id']}")).json()
    assert done["run"]["status"] == "completed" and done["run"]["output"] == "Refunded 250 to acme."
    assert [v["principal"] for v in state["request"]["quorum"]["votes"]] == ["dana", "bob"]
