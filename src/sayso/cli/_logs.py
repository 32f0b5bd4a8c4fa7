"""How sayso's warnings reach a terminal: one line each on stderr, unless the host already routes logs."""

from __future__ import annotations

import logging


class _OneLine(logging.Formatter):
    """One line per record, without the traceback: the terminal gets what to act on, not sayso's internals."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        # A config problem already says `file:line: warning: ...`.
        return message if record.name == "sayso.config" else f"{record.levelname.lower()}: {message}"


def log_to_terminal() -> None:
    """Show warnings on stderr, one line each; a failed run is not repeated, its result says why."""
    if logging.getLogger().handlers:  # the host (a test runner, `sayso serve`) already decided where logs go
        return
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    handler.addFilter(lambda record: record.name != "sayso.runs")
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
