"""The pure core: decisions checked against requests, resume rules and gating, with no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from sayso import (
    AlreadyDecided,
    Answer,
    ApprovalRequest,
    Approve,
    ClientError,
    ClientResult,
    DecisionRecord,
    InvalidDecision,
    NotReady,
    Question,
    QuestionRequest,
    Reject,
    Request,
    RequestExpired,
    Skip,
)
from sayso._core.decisions import Expired, check_decision
from sayso._core.model_text import model_text
from sayso._core.policy import InterruptPolicy, ToolRule, approval_terms
from sayso._core.resume import plan_resume
from sayso._core.service import parse_service_ask

COMMON = dict(run_id="run_1", thread_id="thr_1", agent_path="files", tool_call_id="call_1", created_at=100.0)
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}


def approval(**overrides: object) -> ApprovalRequest:
    fields: dict[str, object] = dict(COMMON, request_id="req_a", tool_name="delete_file", args={"name": "a"})
    fields.update(hint="sure?", args_schema=SCHEMA, scopes=("once", "thread"))
    fields.update(overrides)
    return ApprovalRequest(**fields)  # type: ignore[arg-type]


def question(*questions: Question) -> QuestionRequest:
    return QuestionRequest(**COMMON, request_id="req_q", tool_name="ask_user", questions=questions)  # type: ignore[arg-type]


PICK = Question(question="Which file?", choices=("a", "b"))
MANY = Question(question="Which colours?", choices=("red", "blue"), multiple=True)


def test_approve_with_valid_edit_is_accepted() -> None:
    """An approval whose edited arguments fit the tool's schema is accepted as given."""
    decision = Approve(edited_args={"name": "b"})
    assert check_decision(approval(), decision, existing=None, now=101) == decision


@pytest.mark.parametrize(
    ("edited", "problem"),
    [
        pytest.param({"nme": "b"}, "'nme' was unexpected", id="unknown-field"),
        pytest.param({"name": 3}, "name: 3 is not of type 'string'", id="wrong-type"),
        pytest.param({}, "'name' is a required property", id="missing"),
    ],
)
def test_invalid_edited_args_are_refused_naming_the_problem(edited: dict[str, object], problem: str) -> None:
    """Edited arguments with unknown, mistyped or missing fields are refused naming the problem and the request."""
    with pytest.raises(InvalidDecision) as refused:
        check_decision(approval(), Approve(edited_args=edited), existing=None, now=101)
    assert problem in str(refused.value)
    assert refused.value.request_id == "req_a"


def test_scope_not_offered_is_refused() -> None:
    """An approval cannot be remembered for a scope the request does not offer."""
    with pytest.raises(InvalidDecision, match="scope 'always' is not offered"):
        check_decision(approval(), Approve(scope="always"), existing=None, now=101)


def test_decision_kind_must_fit_request_kind() -> None:
    """A decision of the wrong kind (an answer to an approval, an approval to a question) is refused."""
    with pytest.raises(InvalidDecision, match="this approval request takes approve, reject, skip, not 'answer'"):
        check_decision(approval(), Answer(answers=(("x",),)), existing=None, now=101)
    with pytest.raises(InvalidDecision, match="^request '[^']+': this question request takes answer, skip"):
        check_decision(question(PICK), Approve(), existing=None, now=101)


@pytest.mark.parametrize(
    ("answers", "problem"),
    [
        pytest.param((), "expected 2 answer(s), one per question, got 0", id="too-few"),
        pytest.param((("a",), ("red",), ("x",)), "expected 2 answer(s), one per question, got 3", id="too-many"),
        pytest.param((("",), ("red",)), "question 'Which file?' needs an answer", id="empty"),
        pytest.param(
            (("a", "b"), ("red",)), "question 'Which file?' takes one of its choices, got 2: 'a', 'b'", id="two-choices"
        ),
        pytest.param(
            (("a", "mine", "also mine"), ("red",)),
            "question 'Which file?' takes one answer in the person's own words (beside at most one choice), got 2",
            id="two-own-answers",
        ),
    ],
)
def test_wrong_answers_are_refused_naming_the_question(answers: tuple[tuple[str, ...], ...], problem: str) -> None:
    """Answers are refused naming the question when there is not one per question, one is empty, or a single-choice
    question gets two of its choices (or two answers in the person's own words)."""
    with pytest.raises(InvalidDecision) as refused:
        check_decision(question(PICK, MANY), Answer(answers=answers), existing=None, now=101)
    assert refused.value.problem == problem


def test_answers_may_be_own_words_and_several_for_multiple() -> None:
    """An answer may be the person's own words rather than a choice, and a multiple-choice question takes several."""
    decision = Answer(answers=(("neither, keep both",), ("red", "green")))
    assert check_decision(question(PICK, MANY), decision, existing=None, now=101) == decision


def test_a_single_choice_question_takes_one_choice_and_own_words_beside_it() -> None:
    """Free text is always allowed: one of the choices plus the person's own words is one valid answer."""
    decision = Answer(answers=(("a", "but only the first half"), ("red",)))
    assert check_decision(question(PICK, MANY), decision, existing=None, now=101) == decision


def test_identical_repeat_is_a_noop_and_a_different_one_is_refused() -> None:
    """Repeating the recorded decision changes nothing; a different one is refused, because the first decision wins."""
    first = DecisionRecord(request_id="req_a", decision=Reject(reason="no"), by="person", principal="p", decided_at=1)
    assert check_decision(approval(), Reject(reason="no"), existing=first, now=101) is None
    with pytest.raises(AlreadyDecided, match="the first decision wins"):
        check_decision(approval(), Approve(), existing=first, now=101)


def test_decision_after_expiry_is_refused() -> None:
    """A decision at or after the request's expiry is refused, and one just before it is accepted."""
    with pytest.raises(RequestExpired):
        check_decision(approval(expires_at=150.0), Approve(), existing=None, now=150.0)
    assert check_decision(approval(expires_at=150.0), Approve(), existing=None, now=149.0) == Approve()


def test_what_the_model_reads() -> None:
    """The model reads why for a rejection, skip, expiry (in UTC) or client error, and nothing extra for an approval
    or client result."""
    assert model_text(Reject(reason="too risky")) == "Declined: too risky"
    assert model_text(Reject()) == "Declined by the person."
    assert model_text(Skip(reason="later")) == "Skipped: later"
    assert model_text(Approve()) is None
    assert model_text(Expired(expires_at=1767261600.0)) == "Expired: no decision before 2026-01-01 10:00:00 UTC"
    assert model_text(ClientError(message="user closed the tab")) == "Error: user closed the tab"
    assert model_text(ClientResult(value=1)) is None


def test_resume_waits_for_every_request_unless_forced() -> None:
    """A resume waits until every request is decided unless forced, and then the open ones are skipped with a reason."""
    requests: list[Request] = [approval(), question(PICK)]
    decided = {
        "req_a": DecisionRecord(request_id="req_a", decision=Approve(), by="person", principal="p", decided_at=1)
    }
    with pytest.raises(NotReady, match="1 request\\(s\\) still open \\(req_q\\)"):
        plan_resume("run_1", requests, decided, force=False, now=5)
    plan = plan_resume("run_1", requests, decided, force=True, now=5)
    assert [d.request_id for d in plan.added] == ["req_q"]
    assert plan.added[0].decision == Skip(reason="the run was resumed before this request was answered")
    assert set(plan.decisions) == {"req_a", "req_q"}


@pytest.mark.parametrize(
    ("tool", "declared", "read_only", "gated"),
    [
        pytest.param("delete_file", False, False, True, id="by-name"),
        pytest.param("merchant___refund", False, False, True, id="by-glob"),
        pytest.param("list_files", False, False, False, id="not-listed"),
        pytest.param("list_files", True, False, True, id="declared-by-tool"),
        pytest.param("merchant___lookup", False, True, False, id="read-only-skipped"),
    ],
)
def test_gate_first_match(tool: str, declared: bool, read_only: bool, gated: bool) -> None:
    """A tool is gated when a rule matches its name or glob or it declares it needs approval, unless the policy skips
    read-only tools."""
    policy = InterruptPolicy(
        tools=(ToolRule(name="delete_file", remember="thread"), ToolRule(name="merchant___*")),
        skip_read_only=True,
    )
    gate = approval_terms(policy, tool, declared=declared, read_only=read_only)
    assert (gate is not None) == gated


def test_first_matching_rule_sets_the_scopes() -> None:
    """The first matching rule's `remember` sets the offered scopes, and a tool gated by its own declaration gets the
    policy default."""
    policy = InterruptPolicy(
        tools=(ToolRule(name="delete_*", remember="always"), ToolRule(name="delete_file", remember="once")),
        remember="thread",
    )
    gate = approval_terms(policy, "delete_file", declared=False, read_only=False)
    assert gate is not None and gate.scopes == ("once", "thread", "always")
    declared = approval_terms(policy, "other", declared=True, read_only=False)
    assert declared is not None and declared.scopes == ("once", "thread")


@pytest.mark.parametrize(
    ("reply", "expires_at"),
    [
        pytest.param(
            {"kaboo_approval": {"request": "apr_1", "expiresAt": "2026-01-01T00:00:00Z"}}, 1767225600.0, id="iso"
        ),
        pytest.param({"kaboo_approval": {"request": "apr_1", "expiresAt": 1767225600}}, 1767225600.0, id="epoch"),
        pytest.param({"sayso_approval": {"request": "apr_1", "expires_at": 1767225600.5}}, 1767225600.5, id="ours"),
        pytest.param({"kaboo_approval": {"request": "apr_1"}}, None, id="none"),
    ],
)
def test_a_services_deadline_is_read_in_kaboos_spelling_too(reply: dict[str, Any], expires_at: float | None) -> None:
    """A service's approval reply gives its deadline as `expires_at`, or as kaboo's `expiresAt` (epoch or ISO 8601)."""
    ask = parse_service_ask(reply)
    assert ask is not None and ask.expires_at == expires_at


def test_a_deadline_that_cannot_be_read_makes_no_request() -> None:
    """An unreadable deadline is no request at all: nothing would wait longer than the service meant."""
    assert parse_service_ask({"kaboo_approval": {"request": "apr_1", "expiresAt": "next tuesday"}}) is None
