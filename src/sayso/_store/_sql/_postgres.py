"""The PostgreSQL driver of the transaction interface (`_tx.Tx`): asyncpg, a pool per event loop.

An asyncpg connection belongs to the loop that opened it, so a store used from several loops (a
server and a program embedding it on threads of their own, or one `asyncio.run` after another)
holds a pool for each, closed with the store or as its loop ends (`closed_with_the_loop`).
SQLAlchemy's engines for the listings follow the same rule (`_conn._SqlConn`).
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import anyio

from ._tx import _NAMED, NO_PARAMS, Database, Params, Row, Sql, Tx, Work

T = TypeVar("T")


_ROWCOUNT = re.compile(r"(\d+)$")

MAX_PARAMS = 32767
"""The most parameters one statement may carry (PostgreSQL's protocol counts them in 16 bits): a pause of
thousands of requests queues more, and is sent as several combined writes."""

MAX_COMBINED = 500
"""The most queued writes combined into one statement: past that, a longer statement saves no round trip
worth its parse."""


class _PostgresTx(Tx):
    dialect: Literal["sqlite", "postgresql"] = "postgresql"

    def __init__(self, conn: Any) -> None:  # an asyncpg connection (asyncpg ships no type hints)
        self.conn = conn
        self.queued: list[tuple[Sql, Params]] = []
        self.queued_params = 0

    async def one(self, sql: Sql, params: Params = NO_PARAMS) -> Row | None:
        await self.flush()
        row: Row | None = await self.conn.fetchrow(sql.pg_text, *[params[n] for n in sql.names])
        return row

    async def all(self, sql: Sql, params: Params = NO_PARAMS) -> list[Row]:
        await self.flush()
        return list(await self.conn.fetch(sql.pg_text, *[params[n] for n in sql.names]))

    async def run(self, sql: Sql, params: Params = NO_PARAMS) -> int:
        await self.flush()
        status = await self.conn.execute(sql.pg_text, *[params[n] for n in sql.names])
        found = _ROWCOUNT.search(status)
        return int(found.group(1)) if found else 0

    async def many(self, sql: Sql, rows: Sequence[Params]) -> None:
        if len(rows) == 1:  # one row is one plain execute: executemany's batching costs more than it saves
            await self.run(sql, rows[0])
        elif rows:
            await self.flush()
            await self.conn.executemany(sql.pg_text, [[r[n] for n in sql.names] for r in rows])

    async def later(self, sql: Sql, rows: Sequence[Params]) -> None:
        for row in rows:
            if len(self.queued) >= MAX_COMBINED or self.queued_params + len(sql.names) > MAX_PARAMS:
                await self.flush()
            self.queued.append((sql, row))
            self.queued_params += len(sql.names)

    async def flush(self) -> None:
        """Send the queued writes: one statement, the first ones as data-modifying `WITH` parts of the last."""
        if not self.queued:
            return
        queued, self.queued, self.queued_params = self.queued, [], 0
        sql = queued[0][0] if len(queued) == 1 else _combined(tuple(q[0] for q in queued))
        params = queued[0][1] if len(queued) == 1 else {f"q{i}_{n}": p[n] for i, (_, p) in enumerate(queued) for n in p}
        await self.conn.execute(sql.pg_text, *[params[n] for n in sql.names])


@functools.lru_cache(maxsize=64)
def _combined(parts: tuple[Sql, ...]) -> Sql:
    """Writes as one PostgreSQL statement (data-modifying CTEs), each part's parameters renamed apart."""

    def renamed(i: int, part: Sql) -> str:
        return _NAMED.sub(lambda m: f":q{i}_{m.group(1)}", part.pg_source)

    *first, last = (renamed(i, part) for i, part in enumerate(parts))
    return Sql(
        "-- only PostgreSQL runs combined writes",
        pg="WITH " + ", ".join(f"w{i} AS ({text})" for i, text in enumerate(first)) + " " + last,
    )


class PostgresDatabase(Database):
    """asyncpg pools, one per event loop; reads run on a pooled connection outside any explicit transaction.

    An asyncpg connection belongs to the loop that opened it, so a store shared by loops on two threads
    (a server and a program embedding it), or used by one `asyncio.run` after another, opens a pool for
    each loop it is used on, as the SQLite store keeps a read connection for each thread. A loop's pool
    closes with the store, or when `asyncio.run` (or `anyio.run`) ends its loop, whichever comes first.
    """

    def __init__(self, dsn: str) -> None:
        import asyncpg  # the `postgres` extra; asyncpg ships no type hints (ignored in the mypy config)

        self.dsn = dsn
        self._pools: dict[asyncio.AbstractEventLoop, tuple[Any, AsyncGenerator[None]]] = {}
        self._opened = False
        self.integrity_errors = (asyncpg.IntegrityConstraintViolationError,)
        self.errors = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError)
        # PostgreSQL rolled the transaction back to break a deadlock, or for a serialization failure.
        self.retry_errors = (asyncpg.DeadlockDetectedError, asyncpg.SerializationError)

    async def open(self) -> None:
        self._opened = True
        await self._pool()

    async def _pool(self) -> Any:
        """This loop's pool, opened on its first use here."""
        loop = asyncio.get_running_loop()
        if (held := self._pools.get(loop)) is not None:
            return held[0]
        assert self._opened, "PostgresDatabase.open() was not called"
        import asyncpg

        # The pool's default reset sends UNLISTEN, RESET ALL, CLOSE ALL and releases advisory locks on
        # every release: sayso leaves no session state behind (its settings and locks are per
        # transaction, and a failed transaction is rolled back before release), so it skips that round trip.
        pool = await asyncpg.create_pool(self.dsn, min_size=1, max_size=10, reset=_no_reset)
        if (held := self._pools.get(loop)) is not None:  # another task of this loop opened one meanwhile
            await pool.close()
            return held[0]
        forget_ended_loops(self._pools)
        self._pools[loop] = (pool, await closed_with_the_loop(pool.close))
        return pool

    async def read(self, work: Work[T]) -> T:
        # Read committed: a transaction around reads would add two round trips and no consistency.
        async with (await self._pool()).acquire() as conn:
            return await work(_PostgresTx(conn))

    async def write(self, work: Work[T], *, durable: bool = True) -> T:
        async with (await self._pool()).acquire() as conn:
            await conn.execute("BEGIN" if durable else "BEGIN; SET LOCAL synchronous_commit TO OFF")
            tx = _PostgresTx(conn)
            try:
                result = await work(tx)
                await tx.flush()
            except BaseException:
                await _rollback(conn)
                raise
            await conn.execute("COMMIT")
            return result

    async def aclose(self) -> None:
        """Close this loop's pool, and have the other loops that still run close theirs."""
        pools, self._pools, self._opened = self._pools, {}, False
        await close_on_their_loops(pools)


async def _until_the_loop_ends(close: Callable[[], Awaitable[object]]) -> AsyncGenerator[None]:
    try:
        yield
    finally:
        await close()


async def closed_with_the_loop(close: Callable[[], Awaitable[object]]) -> AsyncGenerator[None]:
    """An async generator, started, whose end runs `close`: the running loop ends it as the loop shuts down.

    `asyncio.run` and `anyio.run` close a loop's unfinished async generators before the loop itself
    (`loop.shutdown_asyncgens`), so what belongs to a loop (an asyncpg pool) is closed while the loop
    can still run its close, not left to warn when collected. The caller keeps the generator: the loop
    holds it only weakly.
    """
    keeper = _until_the_loop_ends(close)
    await anext(keeper)
    return keeper


def forget_ended_loops(held: dict[asyncio.AbstractEventLoop, Any]) -> None:
    """Drop what belonged to loops that have closed (`closed_with_the_loop` closed it as each ended).

    Other threads' loops may add theirs meanwhile: the keys are copied in one step, and each drop
    tolerates another thread's.
    """
    for loop in list(held):
        if loop.is_closed():
            held.pop(loop, None)


async def close_on_their_loops(held: Mapping[asyncio.AbstractEventLoop, tuple[object, AsyncGenerator[None]]]) -> None:
    """End `closed_with_the_loop`'s keepers: the running loop's here, another running loop's on that loop."""
    here = asyncio.get_running_loop()
    for loop, (_, keeper) in held.items():
        if loop is here:
            await keeper.aclose()
        elif not loop.is_closed():
            asyncio.run_coroutine_threadsafe(keeper.aclose(), loop)


async def _no_reset(conn: Any) -> None:
    """Nothing to reset on a connection going back to the pool (see `PostgresDatabase.open`)."""


async def _rollback(conn: Any) -> None:
    with anyio.CancelScope(shield=True):
        if not conn.is_closed():
            await conn.execute("ROLLBACK")
