"""`SqlRunStore`: the `RunStore` port on SQLite or PostgreSQL, assembled from one mixin per concept."""

from __future__ import annotations

from ._grants_audit import _GrantsAudit
from ._ledger import _Ledger
from ._listings import _Listings
from ._marks import _Marks
from ._outbox import _Outbox
from ._requests import _Requests
from ._runs import _Runs
from ._workflows import _Workflows


class SqlRunStore(_Runs, _Requests, _Ledger, _GrantsAudit, _Listings, _Marks, _Outbox, _Workflows):
    """The durable store on SQLite (the default, one file) or PostgreSQL (for several replicas).

    `SqlRunStore("sqlite:///sayso.db", base_dir=...)` takes relative SQLite paths from `base_dir`;
    `postgresql://…` URLs go through asyncpg (the `postgres` extra). `open()` brings the schema up
    to date with the Alembic migrations beside the store.

    Every verb is one short transaction, and every step that must happen once is a conditional
    write whose row count says who won, so the same code is safe across processes and replicas.
    """
