"""The store's codecs, built at once for a process about to serve (each is otherwise built on its first use)."""

from __future__ import annotations

from ._trusted import trusted_validator
from ._verbs._runs import REMOTE_TASK_ADAPTER


def build_codecs() -> None:
    """Build pydantic-ai's message adapter, the trusted history schema and the remote task's adapter now."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    ModelMessagesTypeAdapter.rebuild()
    trusted_validator()
    REMOTE_TASK_ADAPTER.rebuild()
