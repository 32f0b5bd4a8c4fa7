"""The document primitive every backend implements: a write with an expected revision wins once, a blind one always."""

from __future__ import annotations

from sayso._store import RunStore
from sayso._store._primitives import Document, StoreTx, TxStore


async def test_a_document_written_with_an_expected_revision_is_written_only_over_that_revision(
    store: RunStore,
) -> None:
    """`expect=0` creates a document once; `expect=n` replaces revision n only; a blind put bumps the revision."""
    assert isinstance(store, TxStore)

    async def put(body: str, expect: int | None) -> bool:
        async def work(tx: StoreTx) -> bool:
            return await tx.put_document("test.docs", "k", body, 1.0, expect=expect)

        return await store._write(work)

    async def get() -> Document | None:
        async def work(tx: StoreTx) -> Document | None:
            return await tx.document("test.docs", "k")

        return await store._read(work)

    assert await get() is None
    assert not await put('"nothing yet"', 1)  # there is no revision 1 to replace
    assert await put('"first"', 0)
    assert not await put('"again"', 0)  # created once
    assert await get() == Document(body='"first"', revision=1)
    assert not await put('"stale"', 2)
    assert await put('"second"', 1)
    assert await put('"blind"', None)
    assert await get() == Document(body='"blind"', revision=3)
    assert await store.get_mark("test.docs", "k") == '"blind"'  # an adapter's mark is a document too
