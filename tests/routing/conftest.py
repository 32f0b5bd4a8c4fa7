"""The refunds example (examples/refunds, docs/guides/routing.md) with a token per principal, for every interface."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sayso import Config, PrincipalConfig, Sayso, load_config
from sayso.protocols.a2a import a2a_router
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app

from ..conftest import ROOT, InProcess

REFUNDS = ROOT / "examples" / "refunds" / "sayso.yaml"
NAMES = ("alice", "bob", "carol", "dana")
PRINCIPALS = [PrincipalConfig(name=n, token=f"{n}-token") for n in NAMES]
"""The example's principals, each signing in with `NAME-token`."""


@pytest.fixture
def refunds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Config:
    """The example's config over this test's own store, its principals' tokens set."""
    monkeypatch.setenv("SAYSO_STORE", f"sqlite:///{tmp_path / 'sayso.db'}")
    for name in NAMES:
        monkeypatch.setenv(f"{name.upper()}_TOKEN", f"{name}-token")
    return load_config(REFUNDS).model_copy(update={"principals": PRINCIPALS})


@pytest.fixture
async def server(refunds: Config) -> AsyncIterator[InProcess]:
    """The example served in-process: REST, the web UI, A2A and AG-UI."""
    sayso = Sayso(refunds)
    app = create_app(sayso, routers=[a2a_router(sayso), ag_ui_router(sayso)], expire_every_seconds=None)
    served = await InProcess(app=app, sayso=sayso).start()
    yield served
    await served.stop()
