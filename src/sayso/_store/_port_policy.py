"""`PolicyPort`: the store verbs approval policies need beside the core ones — escalation timers and statistics."""

from __future__ import annotations

from ._port_escalation import EscalationPort
from ._port_stats import StatsPort


class PolicyPort(EscalationPort, StatsPort):
    """The escalation verbs (`_port_escalation`) and the statistics listing (`_port_stats`), for `RunStore`."""
