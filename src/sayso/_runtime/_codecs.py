"""What a long-lived process builds before its first request: the codecs a short command builds only if it uses them.

The core's adapters (requests, client tools, decisions, votes, audit events) and the store's
(pydantic-ai's message adapter, the trusted history schema) are built on first use
(`defer_build`), so that `sayso --help` or `sayso inbox` never pays for what it does not encode
(tests/cli/test_startup.py). A server would pay on its first request instead: its first run took
~70–90 ms against ~9 for the next ones on the bench VM (bench/first_cycle.py), felt by the first
person after every start, restart and new replica. `sayso serve` builds them before it listens,
so also before the heap freezes what the start made (`server/_heap.py`).
"""

from __future__ import annotations

from .._core.audit_events import AUDIT_EVENT_ADAPTER
from .._core.decisions import DECISION_ADAPTER
from .._core.requests import CLIENT_TOOLS_ADAPTER, REQUEST_ADAPTER
from .._core.votes import VOTE_ADAPTER
from .._store import build_codecs as build_store_codecs


def build_codecs() -> None:
    """Build every codec the runtime and its store defer, now (those already built are left as they are)."""
    for adapter in (REQUEST_ADAPTER, CLIENT_TOOLS_ADAPTER, DECISION_ADAPTER, VOTE_ADAPTER, AUDIT_EVENT_ADAPTER):
        adapter.rebuild()
    build_store_codecs()
