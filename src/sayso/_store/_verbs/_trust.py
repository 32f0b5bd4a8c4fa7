"""The verbs of what people entrusted and adapters keep — revoking grants, appending audit, marks — once."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from ..._core.audit_events import AuditEvent
from ..._core.grants import Grant
from ...exceptions import StoreError
from .._ops import GrantOf, RevokeGrant
from .._primitives import StoreTx, TxStore

_MARK_ATTEMPTS = 20
"""How many times `update_mark` reads and writes again when other writers keep coming first."""


class TrustVerbs(TxStore):
    """`RunStore`'s writing verbs of grants and the audit log, and adapters' marks."""

    async def revoke_grant(self, grant_id: str, *, now: float, audit: Sequence[AuditEvent] = ()) -> Grant | None:
        async def work(tx: StoreTx) -> Grant | None:
            if not await tx.change(RevokeGrant(grant_id, now)):
                return None
            revoked = await tx.get(GrantOf(grant_id))
            assert revoked is not None, "the grant was just revoked in this transaction"
            await tx.append_audit(audit)
            return revoked

        return await self._write(work)

    async def append_audit(self, bodies: Sequence[AuditEvent]) -> None:
        async def work(tx: StoreTx) -> None:
            await tx.append_audit(bodies)

        await self._write(work)

    # adapters' own state

    async def set_mark(self, namespace: str, key: str, value: str) -> None:
        now = time.time()

        async def work(tx: StoreTx) -> None:
            await tx.put_document(namespace, key, value, now)

        await self._write(work)

    async def claim_mark(self, namespace: str, key: str, value: str) -> bool:
        now = time.time()

        async def work(tx: StoreTx) -> bool:
            return await tx.put_document(namespace, key, value, now, expect=0)

        async def lost(tx: StoreTx) -> bool:
            return False  # another writer kept it first

        return await self._write(work, race=lost)

    async def update_mark(self, namespace: str, key: str, change: Callable[[str | None], str]) -> str:
        now = time.time()

        async def work(tx: StoreTx) -> str | None:
            found = await tx.document(namespace, key)
            value = change(None if found is None else found.body)
            kept = await tx.put_document(namespace, key, value, now, expect=0 if found is None else found.revision)
            return value if kept else None

        async def again(tx: StoreTx) -> str | None:
            return None  # another writer inserted it first: read it afresh

        for _ in range(_MARK_ATTEMPTS):
            value = await self._write(work, race=again)
            if value is not None:
                return value
        raise StoreError(f"mark {namespace}/{key}: changed by others {_MARK_ATTEMPTS} times while being updated")

    async def get_mark(self, namespace: str, key: str) -> str | None:
        async def work(tx: StoreTx) -> str | None:
            found = await tx.document(namespace, key)
            return None if found is None else found.body

        return await self._read(work)
