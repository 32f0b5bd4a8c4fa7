"""SQL reads of pauses, requests and decisions: one request, a pause's or a run's requests, the open ones."""

from __future__ import annotations

from ..._core.requests import REQUEST_ADAPTER, Request
from ..._core.votes import VOTE_ADAPTER, Vote
from ...exceptions import StoreError
from .._records import PauseState, RequestState, RequestWithRun, RunRequests
from . import _rows
from ._base import _SqlBase
from ._tx import Tx


class _Requests(_SqlBase):
    async def get_request(self, request_id: str) -> RequestState | None:
        async def work(tx: Tx) -> RequestState | None:
            row = await tx.one(_rows.GET_REQUEST, {"request_id": request_id})
            if row is None:
                return None
            request = REQUEST_ADAPTER.validate_json(row["body"])
            return RequestState(
                request=request,
                pause_status=row["pause_status"],
                decision=_rows.decision_of(row),
                votes=await _votes(tx, request),
            )

        return await self._raw_read(work)

    async def request_with_run(self, request_id: str) -> RequestWithRun | None:
        async def work(tx: Tx) -> RequestWithRun | None:
            row = await tx.one(_rows.REQUEST_WITH_RUN, {"request_id": request_id})
            if row is None:
                return None
            request = REQUEST_ADAPTER.validate_json(row["body"])
            return RequestWithRun(
                request=request,
                pause_status=row["pause_status"],
                decision=_rows.decision_of(row),
                votes=await _votes(tx, request),
                run=_rows.run_record(row),
            )

        return await self._raw_read(work)

    async def pause_state(self, pause_id: str) -> PauseState:
        async def work(tx: Tx) -> PauseState:
            pause = await tx.one(_rows.GET_PAUSE, {"pause_id": pause_id})
            if pause is None:
                raise StoreError(f"no pause has id {pause_id!r}")
            requests, decisions = _rows.requests_and_decisions(
                await tx.all(_rows.PAUSE_REQUESTS, {"pause_id": pause_id})
            )
            return PauseState(run_id=pause["run_id"], status=pause["status"], requests=requests, decisions=decisions)

        return await self._raw_read(work)

    async def run_requests(self, run_id: str) -> RunRequests:
        async def work(tx: Tx) -> RunRequests:
            requests, decisions = _rows.requests_and_decisions(await tx.all(_rows.RUN_REQUESTS, {"run_id": run_id}))
            return RunRequests(requests=requests, decisions=decisions)

        return await self._raw_read(work)

    async def open_requests(self, *, limit: int = 100) -> list[Request]:
        async def work(tx: Tx) -> list[Request]:
            rows = await tx.all(_rows.OPEN_REQUESTS, {"limit": limit})
            return [REQUEST_ADAPTER.validate_json(r["body"]) for r in rows]

        return await self._raw_read(work)


async def _votes(tx: Tx, request: Request) -> tuple[Vote, ...]:
    """A routed request's votes (one more read only for those)."""
    if request.routing is None:
        return ()
    return tuple(
        VOTE_ADAPTER.validate_json(r["body"]) for r in await tx.all(_rows.VOTES, {"request_id": request.request_id})
    )
