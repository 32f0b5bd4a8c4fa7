"""The SQL backend's write transactions: the business verbs' work over `SqlTx`, signed with the audit key.

Connections, reads and the mapping of database errors live in `_conn` (what a store that only
lists needs); this adds what writing needs — the primitives (`_prims.SqlTx`) and the store's
audit key on every write transaction — so loading it is what a writer pays, not a reader.
"""

from __future__ import annotations

from typing import TypeVar

from ..._core.audit import AuditHead
from .._primitives import TxStore, TxWork
from ._conn import _SqlConn
from ._prims import SqlTx
from ._tx import Tx, Work

T = TypeVar("T")


class _SqlBase(_SqlConn, TxStore):
    """The SQL store's transactions: the business verbs run on them as `SqlTx` work."""

    # the transactions of the business verbs (the hot path)

    async def _write(self, work: TxWork[T], *, race: TxWork[T] | None = None, durable: bool = True) -> T:
        """Run `work` over `SqlTx` in one write transaction (see `TxStore._write`).

        A concurrent writer inserting the same key first can happen only where writers do not
        queue (PostgreSQL). `durable=False`: see `Database.write`.
        """
        return await self._raw_write(_on_sql(work), race=None if race is None else _on_sql(race), durable=durable)

    async def _read(self, work: TxWork[T]) -> T:
        """Run `work` over `SqlTx` without writing."""
        return await self._raw_read(_on_sql(work))

    # plain SQL

    async def _raw_write(self, work: Work[T], *, race: Work[T] | None = None, durable: bool = True) -> T:
        """Run `work` on the driver's transaction, committed when it returns (see `_write` for `race`, `durable`)."""
        db = self._database()
        heads: list[AuditHead] = []
        result = await self._mapped(
            db,
            lambda: db.write(self._signed(work, heads), durable=durable),
            None if race is None else lambda: db.write(self._signed(race, heads)),
        )
        if heads:
            self._announce_head(heads[-1])  # only now: a rolled-back head was never the chain's
        return result

    def _signed(self, work: Work[T], heads: list[AuditHead]) -> Work[T]:
        """`work` with this store's audit key on its transaction, keeping the chain's new head it leaves."""
        key = self.audit_key

        async def signed(tx: Tx) -> T:
            tx.audit_key = key
            result = await work(tx)
            if tx.audit_head is not None:
                heads.append(tx.audit_head)
            return result

        return signed


def _on_sql(work: TxWork[T]) -> Work[T]:
    """Work over the primitives as work over the driver's transaction."""

    async def on_sql(tx: Tx) -> T:
        return await work(SqlTx(tx))

    return on_sql
