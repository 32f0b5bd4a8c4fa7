"""AG-UI for sayso agents: one endpoint per agent, `POST /ag-ui/{agent}`, streaming events over SSE.

See docs/guides/ag-ui.md.

```python
from sayso.protocols.ag_ui import ag_ui_router
from sayso.server import create_app

app = create_app(sayso, routers=[ag_ui_router(sayso)])
```

Needs the `ag-ui` extra (`pip install 'sayso[ag-ui]'`).
"""

from __future__ import annotations

try:
    from ._app import AgUiAgent, ag_ui_router
    from ._inbound import decision_from_entry
    from ._mapping import REASONS, error_event, interrupt
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("AG-UI needs ag-ui-protocol: pip install 'sayso[ag-ui]'") from exc

__all__ = [
    "REASONS",
    "AgUiAgent",
    "ag_ui_router",
    "decision_from_entry",
    "error_event",
    "interrupt",
]
