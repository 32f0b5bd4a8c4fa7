"""A2A for sayso agents (docs/guides/a2a.md), with kagent's human-in-the-loop extension.

```python
from sayso.protocols.a2a import a2a_router
from sayso.server import create_app

app = create_app(sayso, routers=[a2a_router(sayso)])
```

Needs the `a2a` extra (`pip install 'sayso[a2a]'`).
"""

from __future__ import annotations

try:
    from ._app import a2a_router, agent_card, requested_extensions
    from ._handler import SaysoRequestHandler
    from ._mapping import HITL_RESPONSE, HITL_URI, SAYSO_KEY, PauseView, pause_view, status_text, to_a2a_error
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("A2A needs the a2a-sdk: pip install 'sayso[a2a]'") from exc

__all__ = [
    "HITL_RESPONSE",
    "HITL_URI",
    "SAYSO_KEY",
    "PauseView",
    "SaysoRequestHandler",
    "a2a_router",
    "agent_card",
    "pause_view",
    "requested_extensions",
    "status_text",
    "to_a2a_error",
]
