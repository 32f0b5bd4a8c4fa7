"""Mailed links as approvals race other votes: what a link approves is what its mail showed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sayso import Approve, Sayso
from sayso._store import store_from_url

from ..models import tool_model
from ..tools import ran
from .conftest import LINK_KEY, channels_config, pay_route


class EditingMeanwhile:
    """The store, through which carol's edit vote lands (on another replica) the moment bob's link is being used."""

    def __init__(self, inner: Any, carol: Callable[[], Awaitable[object]]) -> None:
        self._inner = inner
        self._carol = carol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def claim_mark(self, namespace: str, key: str, value: str) -> bool:
        if namespace == "channels.links.used":
            await self._carol()
        claimed: bool = await self._inner.claim_mark(namespace, key, value)
        return claimed


async def test_a_link_approves_what_its_mail_showed_though_an_edit_lands_as_it_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two of bob and carol must approve 250. Bob presses Approve in his mail as carol's vote edits it to 100: bob's
    approval starts a round on the 250 he saw, and nothing runs (it counted for carol's 100, unseen, and paid it)."""
    monkeypatch.setenv("SAYSO_LINK_KEY", LINK_KEY)
    config = channels_config(
        tmp_path,
        public_url="http://127.0.0.1:9",
        notify=["email:bob@example.com"],
        smtp_port=9,
        routing={"approvers": ["bob", "carol"], "approvals_required": 2},
    )
    models = {"m": tool_model(pay_route, read="{result}")}
    async with Sayso(config, models=models) as replica:
        request_id = ""

        async def carol() -> None:
            await replica.decide(request_id, Approve(edited_args={"amount": 100}), principal="carol")

        meanwhile: Any = EditingMeanwhile(store_from_url(config.store), carol)  # a RunStore, as Sayso takes
        async with Sayso(config, models=models, store=meanwhile) as app:
            paused = await app.run("pay 250", principal="alice")
            request_id = paused.requests[0].request_id
            link = await app.mail_link(request_id, principal="bob")
            assert link.request["args"] == {"amount": 250}
            voted = await app.decide_by_link(link.token, Approve())
            state = await app.request(request_id)
    assert voted.recorded and voted.run.status == "paused" and ran("pay") == []
    assert voted.quorum is not None and voted.quorum.approved_by == ("bob",)
    assert state.decision is None and state.request.args == {"amount": 250}
