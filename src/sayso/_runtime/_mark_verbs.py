"""`MarkVerbs`: the facade's verbs of what interface adapters keep beside sayso's state (marks), mixed into `Sayso`.

A mark is a value under an adapter's own namespace and a key (A2A's activation of a pause, a task's
push configs, a mailed link used once), kept in the store so every replica sees it.
"""

from __future__ import annotations

from collections.abc import Callable

from ._kernel import Kernel


class MarkVerbs:
    """The facade's verbs of adapters' marks (mixed into `Sayso`)."""

    _k: Kernel

    async def get_mark(self, namespace: str, key: str) -> str | None:
        """A value an interface adapter keeps with sayso's state (e.g. A2A activation), or `None`."""
        return await self._k.store.get_mark(namespace, key)

    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        """Keep a value for an interface adapter in the store, under its own namespace."""
        await self._k.store.set_mark(namespace, key, value)

    async def claim_mark(self, namespace: str, key: str, value: str) -> bool:
        """Keep a value only if none is kept yet; of concurrent callers (any process) exactly one gets `True`."""
        return await self._k.store.claim_mark(namespace, key, value)

    async def update_mark(self, namespace: str, key: str, change: Callable[[str | None], str]) -> str:
        """Replace a value with `change(what is kept now)`, as one step against concurrent updates (any process).

        A list kept under one key (a task's push configs) loses no entry to two callers adding at
        once. `change` may be called again when another writer came first; what it raises is raised.
        """
        return await self._k.store.update_mark(namespace, key, change)
