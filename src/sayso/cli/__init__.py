"""The `sayso` command line."""

from ._startup import collector_paused

with collector_paused():  # typer, rich and pydantic: objects that all live on (see `collector_paused`)
    from . import _audit_grants as _audit_grants  # registers `sayso grants` and `sayso audit` on the app
    from . import _policy as _policy  # registers `sayso policy` on the app
    from . import _stats as _stats  # registers `sayso stats` on the app
    from . import _worker as _worker  # registers `sayso worker` on the app
    from ._app import app, main

__all__ = ["app", "main"]
