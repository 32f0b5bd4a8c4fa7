"""`Reader`: the runtime's reading verbs over the store alone, for callers that run nothing.

`sayso inbox`, `audit`, `grants` and `threads` only read the store (or revoke a grant): building
every agent, its model, its toolsets and MCP sessions, as `Sayso` does, would cost them more than
the work. A `Reader` opens just the config and the store; its verbs are `Sayso`'s own
(`_reading.Reading`), so the access rule and what each returns are the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from .._config.file import Config, load_config
from .._store import RunStore, refuse_missing_folder, store_from_url
from . import _audit
from ._kernel import Kernel
from ._reading import Reading


class Reader(Reading):
    """The reading verbs of a config's store, without its agents; use it as an async context manager."""

    def __init__(
        self, config: Config, *, store: RunStore | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.config = config
        if store is None:
            refuse_missing_folder(config.store_url(), base_dir=config.base_dir)  # as `Sayso`'s config checks do
        self._k = Kernel(
            config=config,
            store=store or store_from_url(config.store_url(), base_dir=config.base_dir),
            agents={},
            clock=clock,
            lease_seconds=30.0,
        )
        _audit.use_key(self._k)
        self._open = False

    @classmethod
    def from_yaml(cls, path: str | Path) -> Reader:
        """Load a `sayso.yaml`; nothing of its agents is built."""
        return cls(load_config(path))

    async def __aenter__(self) -> Reader:
        await self._k.store.open()
        await _audit.warn_unusable(self._k.store, self._k.store.audit_key, self.config)
        self._open = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open = False
        await self._k.store.aclose()
