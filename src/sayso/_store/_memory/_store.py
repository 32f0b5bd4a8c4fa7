"""`MemoryRunStore`: the `RunStore` port in process memory: the shared verbs over `MemoryTx`, and in-memory reads."""

from __future__ import annotations

from .._verbs import DecisionVerbs, EscalationVerbs, OutboxVerbs, RunVerbs, StepVerbs, TrustVerbs
from ._grants_audit import _GrantsAudit
from ._requests import _Requests
from ._runs import _Runs
from ._top_runs import _TopRuns
from ._watch import _Watch


class MemoryRunStore(
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
):
    """The store port in memory: complete, atomic per verb, and gone when the process ends.

    It passes the same contract suite as the SQL backend. Like a database it keeps what it is
    given serialised (requests, decisions, messages, client tools and audit bodies go through
    the same JSON adapters the SQL backend writes with), so mutating an object after storing it,
    or one it handed out, changes nothing stored. An anyio lock makes each transaction atomic,
    and a transaction that raises is undone, so a refused step leaves no trace.
    """
