"""How a paused run carries on, as one pure plan over a snapshot of its pause: the same for every kind of run.

A paused run waits on requests a person answers and on runs below it (a delegate's run, a workflow
agent node's run: a `DelegateRequest` each). Carrying it on is one algorithm whatever the run is:

1. each run below that has ended (or can be carried on now) answers its `DelegateRequest`
   (`step_below` says which to wait on, which to carry on, which have ended);
2. with every request answered (or `force`), `plan_advance` says what the resume applies: every
   request's decision (skips added for the rest), the runs below whose requests were skipped and
   must be closed, and the approved calls the resumed segment runs (marked in the ledger first).

The runtime's cycle (`sayso._runtime._cycle`) reads the snapshot, follows this plan and hands the
result to the run's runner; these functions do no I/O and are tested without a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .decisions import Approve, DecisionRecord
from .requests import ApprovalRequest, DelegateRequest, Request
from .resume import Closer, ResumePlan, open_requests, plan_resume, skipped_at_work

BelowStep = Literal["wait", "carry_on", "ended"]
"""What to do about a run below a pause: leave it waiting or working, carry it on, or read how it ended."""


@dataclass(frozen=True, kw_only=True)
class AdvancePlan:
    """What resuming one pause applies, planned from its requests and every decision known."""

    resume: ResumePlan
    """A decision for every request of the pause, and the skips the resume adds itself."""
    close_below: tuple[str, ...]
    """Runs below (by run id) whose `DelegateRequest` the resume skipped: they are closed, nothing of them runs."""
    approved: tuple[str, ...]
    """Approved requests of the pause: their calls run in the resumed segment, marked in the ledger before it."""
    now: float
    """When the plan was made: the time of the skips it adds, and the start of the resume's lease."""


def waiting_below(requests: Sequence[Request], decided: Mapping[str, DecisionRecord]) -> list[DelegateRequest]:
    """The open requests of a pause that wait on a run below it."""
    return [r for r in open_requests(requests, decided) if isinstance(r, DelegateRequest)]


def step_below(status: str, *, has_open_leaves: bool, force: bool) -> BelowStep:
    """What a resume does about one run below its pause, from that run's status.

    A working run is left to its process. A paused one is carried on when nothing below it waits
    for a person any more, or when the resume is forced (its open requests are skipped too).
    Any other status has ended: its outcome answers the pause's request.
    """
    if status == "running":
        return "wait"
    if status == "paused":
        return "carry_on" if force or not has_open_leaves else "wait"
    return "ended"


def approved_calls(requests: Sequence[Request], resume: ResumePlan) -> tuple[str, ...]:
    """The approved requests of a pause: their calls run in the segment that consumes it."""
    return tuple(
        r.request_id
        for r in requests
        if isinstance(r, ApprovalRequest) and isinstance(resume.decisions[r.request_id].decision, Approve)
    )


def plan_advance(
    run_id: str,
    requests: Sequence[Request],
    decided: Mapping[str, DecisionRecord],
    *,
    force: bool,
    now: float,
    closer: Closer | None = None,
    at_work: Mapping[str, str] | None = None,
) -> AdvancePlan | None:
    """What resuming the pause applies now, or `None` while requests are open and the resume is not forced.

    `decided` holds every decision known, the answers of runs below that just ended included; what a
    forced resume skips is the `closer`'s. `at_work` names the delegate of each `DelegateRequest` (by
    request id) whose run was still at work: its skip says that what it did is unknown.
    """
    if open_requests(requests, decided) and not force:
        return None
    reasons = {request_id: skipped_at_work(delegate) for request_id, delegate in (at_work or {}).items()}
    resume = plan_resume(run_id, requests, decided, force=force, now=now, closer=closer, reasons=reasons)
    by_id = {r.request_id: r for r in requests}
    close_below = tuple(
        request.child_run_id
        for skipped in resume.added
        if isinstance(request := by_id[skipped.request_id], DelegateRequest)
    )
    return AdvancePlan(resume=resume, close_below=close_below, approved=approved_calls(requests, resume), now=now)
