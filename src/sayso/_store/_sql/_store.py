"""`SqlRunStore`: the `RunStore` port on SQLite or PostgreSQL: the shared verbs over `SqlTx`, and SQL reads.

`SqlInbox`'s listings are among its reads: a caller that only lists opens that alone.
"""

from __future__ import annotations

from .._verbs import DecisionVerbs, EscalationVerbs, OutboxVerbs, RunVerbs, StepVerbs, TrustVerbs
from ._grants_audit import _GrantsAudit
from ._inbox import SqlInbox
from ._requests import _Requests
from ._runs import _Runs
from ._top_runs import _TopRuns
from ._watch import _Watch


class SqlRunStore(
    RunVerbs,
    DecisionVerbs,
    TrustVerbs,
    OutboxVerbs,
    EscalationVerbs,
    StepVerbs,
    _Runs,
    _Requests,
    _Watch,
    _GrantsAudit,
    _TopRuns,
    SqlInbox,
):
    """The durable store on SQLite (the default, one file) or PostgreSQL (for several replicas).

    `SqlRunStore("sqlite:///sayso.db", base_dir=...)` takes relative SQLite paths from `base_dir`;
    `postgresql://…` URLs go through asyncpg (the `postgres` extra). `open()` brings the schema up
    to date with the Alembic migrations beside the store.

    Every verb is one short transaction, and every step that must happen once is a conditional
    write whose row count says who won, so the same code is safe across processes and replicas.
    """
