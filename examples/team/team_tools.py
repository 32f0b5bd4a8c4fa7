"""The tool of the team demo's ops agent."""

from __future__ import annotations


def archive_logs(month: str) -> str:
    """Archive the logs of a month.

    Args:
        month: the month, as YYYY-MM.
    """
    return f"Archived the logs of {month}."
