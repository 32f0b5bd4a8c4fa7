"""`MemoryRunStore`: the `RunStore` port in process memory, assembled from one mixin per concept."""

from __future__ import annotations

from ._grants_audit import _GrantsAudit
from ._outbox import _Outbox
from ._requests import _Requests
from ._runs import _Runs
from ._workflows import _Workflows


class MemoryRunStore(_Runs, _Requests, _GrantsAudit, _Outbox, _Workflows):
    """The store port in memory: complete, atomic per verb, and gone when the process ends.

    It passes the same contract suite as the SQL backend. Like a database it keeps what it is
    given serialised (requests, decisions, messages, client tools and audit bodies go through
    the same JSON adapters the SQL backend writes with), so mutating an object after storing it,
    or one it handed out, changes nothing stored. An anyio lock makes each verb atomic, and each
    write checks everything it could refuse before it changes anything, so a refused step
    leaves no trace.
    """
