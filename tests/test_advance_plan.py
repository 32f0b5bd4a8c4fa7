"""The one plan every kind of paused run carries on by (`sayso._core.advance`), tested without a store.

An agent's run waiting on its delegates and a workflow's run waiting on its agent node are planned by
the same pure functions: which runs below to carry on, whether the pause may resume, what is skipped
and closed, which approved calls run.
"""

from __future__ import annotations

import pytest

from sayso import ApprovalRequest, Approve, ClientResult, DecisionRecord, Reject, Skip
from sayso._core.advance import plan_advance, step_below, waiting_below
from sayso._core.requests import DelegateRequest, InputRequest, Request
from sayso._core.resume import Closer

COMMON = dict(run_id="run_1", thread_id="thr_1", agent_path="coordinator", created_at=100.0)


def approval(request_id: str) -> ApprovalRequest:
    return ApprovalRequest(
        **COMMON,  # type: ignore[arg-type]
        request_id=request_id,
        tool_call_id=f"call_{request_id}",
        tool_name="delete_file",
        args={"name": "a"},
        hint="Delete it?",
    )


def below(request_id: str, child: str) -> DelegateRequest:
    return DelegateRequest(
        **COMMON,  # type: ignore[arg-type]
        request_id=request_id,
        tool_call_id=f"call_{request_id}",
        tool_name="researcher",
        child_run_id=child,
    )


def node_input(request_id: str) -> InputRequest:
    return InputRequest(
        **COMMON,  # type: ignore[arg-type]
        request_id=request_id,
        tool_call_id="ask:1",
        tool_name="ask",
        node="ask",
        message="Which city?",
    )


def decided(request_id: str, decision: object, by: str = "person") -> DecisionRecord:
    return DecisionRecord(request_id=request_id, decision=decision, by=by, principal="ada", decided_at=150.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("status", "has_open_leaves", "force", "step"),
    [
        pytest.param("running", False, False, "wait", id="working-is-left-to-its-process"),
        pytest.param("running", False, True, "wait", id="working-is-left-even-when-forced"),
        pytest.param("paused", True, False, "wait", id="paused-on-a-person-waits"),
        pytest.param("paused", False, False, "carry_on", id="paused-and-all-decided-carries-on"),
        pytest.param("paused", True, True, "carry_on", id="paused-and-forced-carries-on"),
        pytest.param("completed", False, False, "ended", id="completed-answers"),
        pytest.param("failed", False, False, "ended", id="failed-answers"),
        pytest.param("cancelled", False, True, "ended", id="cancelled-answers"),
    ],
)
def test_what_a_resume_does_about_a_run_below(status: str, has_open_leaves: bool, force: bool, step: str) -> None:
    """A working run below is left alone, a paused one is carried on once nothing below it waits (or when forced),
    an ended one answers its parent's request."""
    assert step_below(status, has_open_leaves=has_open_leaves, force=force) == step


def test_only_the_open_requests_on_runs_below_are_followed() -> None:
    """The delegates already answered and the person's own requests are not runs to carry on."""
    requests: list[Request] = [approval("req_a"), below("req_d1", "run_d1"), below("req_d2", "run_d2")]
    waiting = waiting_below(requests, {"req_d1": decided("req_d1", ClientResult(value="done"), by="system")})
    assert [r.request_id for r in waiting] == ["req_d2"]


def test_an_open_request_keeps_the_pause_unless_forced() -> None:
    """With a request still open nothing is planned; a delegate's answer alone does not resume its parent."""
    requests: list[Request] = [approval("req_a"), below("req_d", "run_d")]
    answers = {"req_d": decided("req_d", ClientResult(value="found it"), by="system")}
    assert plan_advance("run_1", requests, answers, force=False, now=200.0) is None


def test_every_request_answered_resumes_with_the_approved_calls_marked() -> None:
    """All decided: the plan keeps every decision, adds no skip, closes nothing, and runs the approved call only."""
    requests: list[Request] = [approval("req_a"), approval("req_b"), below("req_d", "run_d")]
    answers = {
        "req_a": decided("req_a", Approve()),
        "req_b": decided("req_b", Reject(reason="no")),
        "req_d": decided("req_d", ClientResult(value="found it"), by="system"),
    }
    plan = plan_advance("run_1", requests, answers, force=False, now=200.0)
    assert plan is not None
    assert plan.resume.decisions == answers
    assert plan.resume.added == []
    assert plan.close_below == ()
    assert plan.approved == ("req_a",)
    assert plan.now == 200.0


def test_a_forced_resume_skips_what_is_open_and_closes_the_runs_below_it_skipped() -> None:
    """Forced: each open request is skipped at the plan's time, by who forced it; a skipped delegate's run is closed,
    an approved call still runs, and a workflow's open question is skipped like any request."""
    requests: list[Request] = [approval("req_a"), below("req_d", "run_d"), node_input("req_i")]
    forcer = Closer("grace", "rest")
    plan = plan_advance("run_1", requests, {"req_a": decided("req_a", Approve())}, force=True, now=300.0, closer=forcer)
    assert plan is not None
    assert [(d.request_id, d.by, d.principal, d.via, d.decided_at) for d in plan.resume.added] == [
        ("req_d", "person", "grace", "rest", 300.0),
        ("req_i", "person", "grace", "rest", 300.0),
    ]
    assert all(isinstance(d.decision, Skip) for d in plan.resume.added)
    assert set(plan.resume.decisions) == {"req_a", "req_d", "req_i"}
    assert plan.close_below == ("run_d",)
    assert plan.approved == ("req_a",)


def test_a_forced_resume_past_a_delegate_still_at_work_says_what_it_did_is_unknown() -> None:
    """A delegate whose run was still at work (or cut off mid-call) may have done its work: its skip says it had not
    answered and that what it did is unknown, not that the run went on before the request was answered."""
    requests: list[Request] = [below("req_d", "run_d"), below("req_e", "run_e")]
    at_work = {"req_d": "researcher (remote task 't-1' at http://127.0.0.1:1/a2a/researcher)"}
    plan = plan_advance("run_1", requests, {}, force=True, now=300.0, closer=Closer("grace"), at_work=at_work)
    assert plan is not None
    reasons = {d.request_id: d.decision.reason for d in plan.resume.added if isinstance(d.decision, Skip)}
    assert reasons == {
        "req_d": "the run was resumed while the delegate researcher (remote task 't-1' at "
        "http://127.0.0.1:1/a2a/researcher) had not answered yet: what it did is unknown, so check its effect "
        "before trying again",
        "req_e": "the run was resumed before this request was answered",
    }


def test_a_workflows_agent_node_is_planned_as_a_delegate_is() -> None:
    """A workflow's pause on its agent node's run resumes once that run's answer is in, exactly like a delegate's."""
    requests: list[Request] = [below("req_node", "run_node")]
    assert plan_advance("run_wf", requests, {}, force=False, now=10.0) is None
    answer = decided("req_node", ClientResult(value="Paris"), by="system")
    plan = plan_advance("run_wf", requests, {"req_node": answer}, force=False, now=10.0)
    assert plan is not None and plan.resume.decisions == {"req_node": answer} and plan.approved == ()
