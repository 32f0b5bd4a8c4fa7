"""Tool-enforced approvals (docs/concepts/pauses.md#tools-whose-service-asks): a service asks through its reply, sayso
pauses, the service hears the decision."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ToolReturnPart
from standardwebhooks import Webhook, WebhookVerificationError

from sayso import Approve, Reject, Sayso, Skip
from sayso._core.audit_events import AUDIT_EVENT_ADAPTER

from .conftest import MakeApp, approvals
from .models import Call, ToolModel, tool_model


class MerchantService:
    """A service that decides, asks and remembers on its own, as seed 001's checklist describes."""

    def __init__(self) -> None:
        self.pending: dict[str, str] = {}
        self.allowed: set[str] = set()
        self.calls: list[dict[str, Any]] = []
        self.notices: list[dict[str, Any]] = []
        self.shape = "object"
        self.forge = False

    def run_mutation(self, store: str, change: str) -> Any:
        """Change something in a store; the service asks for approval when it must."""
        self.calls.append({"store": store, "change": change})
        if store in self.allowed:
            self.allowed.discard(store)
            return f"applied {change!r} to {store}"
        request = "apr_forged" if self.forge else f"apr_{secrets.token_hex(16)}"
        if not self.forge:
            self.pending[request] = store
        ask = {"request": request, "subject": {"key": f"store:{store}", "label": f"changes in {store}"}}
        ask |= {"scopes": ["thread"], "message": f"Apply {change!r} to {store}?"}
        key = "kaboo_approval" if self.shape == "kaboo" else "sayso_approval"
        reply = {key: ask}
        if self.shape == "text":
            return json.dumps(reply)
        if self.shape == "mcp-wrapped":
            return {"result": json.dumps(reply)}
        return reply

    def on_decision(self, notice: dict[str, Any]) -> None:
        """Honour a decision only for a pending request of ours, the first time (checklist items 3-4)."""
        self.notices.append(notice)
        store = self.pending.pop(notice["request"], None)
        if store is not None and notice["decision"] == "approved":
            self.allowed.add(store)


SERVICE = MerchantService()


def run_mutation(store: str, change: str) -> Any:
    """Change something in a store."""
    return SERVICE.run_mutation(store, change)


def change(said: str) -> Call:
    """`change STORE WHAT` asks the service to change WHAT in STORE; the model then says what it read."""
    _, store, what = said.split(" ", 2)
    return "run_mutation", {"store": store, "change": what}


@pytest.fixture(autouse=True)
def fresh_service() -> Iterator[MerchantService]:
    global SERVICE
    SERVICE = MerchantService()
    yield SERVICE


def make(make_app: MakeApp, tmp_path: Path, **interrupt: Any) -> Sayso:
    (tmp_path / "merchant_hooks.py").write_text(
        "from tests import test_tool_approvals as t\n\ndef on_decision(notice):\n    t.SERVICE.on_decision(notice)\n"
    )
    settings = {"tool_approvals": True, "on_decision": "merchant_hooks:on_decision", **interrupt}
    return make_app(
        {"merchant": {"model": "m", "tools": [run_mutation], "interrupt": settings}}, model=tool_model(change)
    )


def model_of(app: Sayso) -> ToolModel:
    model = app.agent_model("merchant")
    assert isinstance(model, ToolModel)
    return model


def model_saw(app: Sayso) -> list[str]:
    return [
        str(p.content) for asked in model_of(app).asked for p in asked.request.parts if isinstance(p, ToolReturnPart)
    ]


@pytest.mark.parametrize("shape", ["object", "text", "mcp-wrapped", "kaboo"])
async def test_every_reply_shape_pauses_and_approval_calls_the_tool_once_more(
    make_app: MakeApp, tmp_path: Path, shape: str
) -> None:
    """A service's ask in any reply shape pauses with its message, subject and scopes, and approval notifies the
    service and calls the tool once more with any edit, unseen by the model."""
    SERVICE.shape = shape
    async with make(make_app, tmp_path) as app:
        paused = await app.run("change summit price=10")
        [request] = approvals(paused.requests)
        assert request.service_request is not None and request.service_request in SERVICE.pending
        assert request.hint == "Apply 'price=10' to summit?"
        assert request.subject is not None and request.subject.key == "store:summit"
        assert request.scopes == ("once", "thread")
        done = await app.decide(request.request_id, Approve(edited_args={"store": "summit", "change": "price=12"}))
    assert done.run.output == "model read: applied 'price=12' to summit"
    assert [c["change"] for c in SERVICE.calls] == ["price=10", "price=12"]
    assert [(n["decision"], n["edited_args"]) for n in SERVICE.notices] == [
        ("approved", {"store": "summit", "change": "price=12"})
    ]
    assert not any("approval" in seen for seen in model_saw(app)), "the service's reply reached the model"


@pytest.mark.parametrize(
    ("decision", "told", "model_reads"),
    [
        pytest.param(Reject(reason="too cheap"), "rejected", "Declined: too cheap", id="reject"),
        pytest.param(Skip(reason="later"), "skipped", "Skipped: later", id="skip"),
    ],
)
async def test_denial_or_skip_never_calls_the_tool_again(
    make_app: MakeApp, tmp_path: Path, decision: Reject | Skip, told: str, model_reads: str
) -> None:
    """A rejection or skip is told to the service and the model, and the tool is never called again."""
    async with make(make_app, tmp_path) as app:
        paused = await app.run("change summit price=10")
        done = await app.decide(paused.requests[0].request_id, decision)
    assert done.run.output == f"model read: {model_reads}"
    assert len(SERVICE.calls) == 1
    assert [n["decision"] for n in SERVICE.notices] == [told]


async def test_an_approval_the_service_never_heard_of_does_not_loop(make_app: MakeApp, tmp_path: Path) -> None:
    """If the service still asks after an approval it never issued, the model reads that approval is still needed
    rather than pausing again."""
    SERVICE.forge = True
    async with make(make_app, tmp_path) as app:
        paused = await app.run("change summit price=10")
        done = await app.decide(paused.requests[0].request_id, Approve())
    assert done.run.status == "completed"
    assert done.run.output is not None and done.run.output.startswith("model read: Still needs approval")
    assert len(SERVICE.calls) == 2
    assert SERVICE.allowed == set()


async def test_no_grant_is_stored_for_a_service_request(make_app: MakeApp, tmp_path: Path) -> None:
    """A remembered scope on a service's request goes to the service but is not stored, so sayso asks again."""
    async with make(make_app, tmp_path) as app:
        paused = await app.run("change summit price=10")
        await app.decide(paused.requests[0].request_id, Approve(scope="thread"))
        assert await app.grants() == []
        again = await app.run("change summit price=11", thread_id=paused.thread_id)
    assert again.status == "paused", "sayso must not remember what the service enforces"
    assert SERVICE.notices[0]["scope"] == "thread"


async def test_with_the_flag_off_the_reply_reaches_the_model(make_app: MakeApp, tmp_path: Path) -> None:
    """With tool approvals off a service's ask is a plain tool result for the model, and the service hears nothing."""
    async with make(make_app, tmp_path, tool_approvals=False) as app:
        result = await app.run("change summit price=10")
    assert result.status == "completed"
    assert "sayso_approval" in (result.output or "")
    assert SERVICE.notices == []


class _Listener(BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Listener.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


async def test_the_service_hears_the_decision_by_signed_webhook(
    make_app: MakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service hears the decision by a webhook signed with its secret, and the notice is audited as delivered."""
    server = HTTPServer(("127.0.0.1", 0), _Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Listener.received = []
    monkeypatch.setenv("MERCHANT_SECRET", "s3cret")
    url = f"http://127.0.0.1:{server.server_port}/decisions"
    try:
        async with make(make_app, tmp_path, decision_webhook=url, decision_webhook_secret_env="MERCHANT_SECRET") as app:
            paused = await app.run("change summit price=10")
            await app.decide(paused.requests[0].request_id, Reject(reason="no"))
            audit = [r.body for r in await app.audit_log()]
    finally:
        server.shutdown()
        server.server_close()
    [(headers, body)] = _Listener.received
    # A plain (not `whsec_`) secret keys the signature with its bytes, for a stock Standard Webhooks verifier.
    sent = Webhook(b"s3cret").verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(b"wrong").verify(body, headers)
    assert (headers["Sayso-Event"], headers["webhook-id"][:8]) == ("service.decision", "dlv_svc_")
    assert (sent["type"], sent["id"]) == ("service.decision", headers["webhook-id"])
    assert (sent["data"]["request"], sent["data"]["decision"]) == (
        approvals(paused.requests)[0].service_request,
        "rejected",
    )
    assert [a["event"] for a in audit] == ["decision", "service_notified"]
    assert audit[1]["delivered"] is True
    assert [AUDIT_EVENT_ADAPTER.validate_python(a) for a in audit] == audit
