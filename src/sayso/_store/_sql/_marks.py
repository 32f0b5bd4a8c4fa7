"""SQL verbs of marks: small values interface adapters keep beside sayso's state, by namespace and key."""

from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite

from .. import _tables as t
from ._base import _SqlBase


class _Marks(_SqlBase):
    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        row = {"namespace": namespace, "key": key, "value": value, "updated_at": time.time()}

        def work(conn: Connection) -> None:
            insert = (postgresql if conn.dialect.name == "postgresql" else sqlite).insert(t.marks).values(**row)
            conn.execute(
                insert.on_conflict_do_update(
                    index_elements=[t.marks.c.namespace, t.marks.c.key],
                    set_={"value": insert.excluded.value, "updated_at": insert.excluded.updated_at},
                )
            )

        await self._write(work)

    async def get_mark(self, namespace: str, key: str) -> str | None:
        query = sa.select(t.marks.c.value).where(t.marks.c.namespace == namespace, t.marks.c.key == key)

        def work(conn: Connection) -> str | None:
            value = conn.execute(query).scalar_one_or_none()
            return None if value is None else str(value)

        return await self._read(work)
