"""SQL verbs of marks: small values interface adapters keep beside sayso's state, by namespace and key."""

from __future__ import annotations

import time

from ._base import _SqlBase
from ._tx import Sql, Tx

_SET = Sql(
    "INSERT INTO marks (namespace, key, value, updated_at) VALUES (:namespace, :key, :value, :now) "
    "ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
)
_GET = Sql("SELECT value FROM marks WHERE namespace = :namespace AND key = :key")


class _Marks(_SqlBase):
    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        params = {"namespace": namespace, "key": key, "value": value, "now": time.time()}

        async def work(tx: Tx) -> None:
            await tx.run(_SET, params)

        await self._write(work)

    async def get_mark(self, namespace: str, key: str) -> str | None:
        async def work(tx: Tx) -> str | None:
            row = await tx.one(_GET, {"namespace": namespace, "key": key})
            return None if row is None else str(row["value"])

        return await self._read(work)
