"""The sayso server: REST API with an inbox, web UI and signed webhooks (docs/guides/operations.md).

See docs/guides/rest.md.

```python
from sayso import Sayso
from sayso.server import create_app

app = create_app(Sayso.from_yaml("sayso.yaml"))   # any ASGI server; or `sayso serve sayso.yaml`
```
"""

from __future__ import annotations

from .._config.file import WebhookConfig, WebhookEvent
from .._core.access import Principal
from ._app import create_app
from ._bind import check_bind
from ._live import LiveSettings
from ._problems import problem_for
from ._webhooks import WebhookDispatcher, hook_key, verify_headers

__all__ = [
    "LiveSettings",
    "Principal",
    "WebhookConfig",
    "WebhookDispatcher",
    "WebhookEvent",
    "check_bind",
    "create_app",
    "hook_key",
    "problem_for",
    "verify_headers",
]
