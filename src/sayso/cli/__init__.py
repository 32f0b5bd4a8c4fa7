"""The `sayso` command line."""

from . import _worker  # noqa: F401 - registers `sayso worker` on the app
from ._app import app, main

__all__ = ["app", "main"]
