"""`GET /v1/stats`: time to decide and approval, rejection, expiry and escalation rates over a window (approvers)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from .._core.escalation import parse_duration
from .._runtime import stats_json
from ..exceptions import InvalidInput
from ._deps import Caller, JsonBody, Runtime, problems, v1_router
from ._schemas_stats import StatsOut

router = v1_router()


@router.get(
    "/stats",
    response_model=StatsOut,
    tags=["audit"],
    operation_id="get_stats",
    responses=problems(401, 403, 422, 503, s403="Only approvers read the statistics."),
)
async def stats(
    caller: Caller,
    sayso: Runtime,
    window: Annotated[
        str, Query(max_length=20, description="How far back: seconds, or `15m`, `24h`, `7d`.", examples=["7d"])
    ] = "7d",
) -> JsonBody:
    """How the approval requests raised in the window went, for approvers.

    Time to decide (p50, p90) and approval, rejection, expiry and escalation rates, overall and per tool,
    rule and approver.
    """
    try:
        seconds = parse_duration(window)
    except ValueError as exc:
        raise InvalidInput(str(exc), field="window") from None
    return dict(stats_json(await sayso.stats(window_seconds=seconds, principal=caller)))
