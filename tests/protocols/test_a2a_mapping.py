"""The pure kagent HITL mapping: status text rules, nested blocks and their ids, legacy
0.x (docs/guides/a2a.md#kagent-0x-and-adk)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from sayso import (
    Answer,
    ApprovalRequest,
    Approve,
    InvalidInput,
    Question,
    QuestionRequest,
    Reject,
    Request,
    Skip,
    Subject,
)
from sayso._runtime import RemoteTask
from sayso.protocols.a2a import HITL_RESPONSE, pause_view, status_text
from sayso.protocols.a2a._mapping import (
    GENERIC_TEXT,
    LegacyInput,
    PauseView,
    _Pending,
    decisions_from_legacy,
    decisions_from_v1,
    legacy_parts,
    request_payload,
    view_text,
)


@dataclass(frozen=True)
class TextCase:
    id: str
    pending: list[_Pending]
    text: str


TEXT_CASES = [
    TextCase(
        "no-hint-names-the-tools",
        [_Pending(name="delete_file", hint=None, args={})],
        "Approval is required for tool(s): delete_file",
    ),
    TextCase(
        "hint-then-names",
        [_Pending(name="delete_file", hint="Deleting this file requires approval", args={})],
        "Deleting this file requires approval (delete_file)",
    ),
    TextCase(
        "every-hint-and-every-name",
        [
            _Pending(name="delete_file", hint="First hint", args={}),
            _Pending(name="restart_pod", hint="Second hint", args={}),
        ],
        "First hint; Second hint (delete_file, restart_pod)",
    ),
    TextCase(
        "only-the-first-had-a-hint",
        [
            _Pending(name="delete_file", hint="Please confirm", args={}),
            _Pending(name="restart_pod", hint=None, args={}),
        ],
        "Please confirm (delete_file, restart_pod)",
    ),
    TextCase(
        "hints-are-not-deduplicated",
        [_Pending(name="a", hint="Same", args={}), _Pending(name="b", hint="Same", args={})],
        "Same; Same (a, b)",
    ),
    TextCase("hints-without-names", [_Pending(name="", hint="Just a hint", args={})], "Just a hint"),
    TextCase(
        "ask-user-is-the-question",
        [
            _Pending(
                name="ask_user",
                hint=None,
                args={"questions": [{"question": "Which database?"}, {"question": "Which features?"}]},
            )
        ],
        "Which database?; Which features?",
    ),
    TextCase("no-tools", [], GENERIC_TEXT),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in TEXT_CASES])
def test_status_text_follows_kagents_rules(case: TextCase) -> None:
    """The pause text follows kagent's rules: the question, or the hints then the tool names."""
    assert status_text(case.pending) == case.text


def approval(
    request_id: str, tool: str, call_id: str, *, path: str = "ops", hint: str | None = None, **args: Any
) -> ApprovalRequest:
    return ApprovalRequest(
        request_id=request_id,
        run_id="run_child" if "/" in path else "run_top",
        thread_id="thr_child" if "/" in path else "thr_top",
        agent_path=path,
        tool_call_id=call_id,
        tool_name=tool,
        args=args,
        created_at=0.0,
        hint=hint or f"Approval is required for tool(s): {tool}",
        subject=Subject(key=f"tool:{tool}", label=tool),
        scopes=("once", "thread"),
    )


def question(request_id: str, *texts: str, path: str = "ops", multiple: bool = False) -> QuestionRequest:
    return QuestionRequest(
        request_id=request_id,
        run_id="run_child" if "/" in path else "run_top",
        thread_id="thr_child" if "/" in path else "thr_top",
        agent_path=path,
        tool_call_id=f"call_{request_id}",
        tool_name="ask_user",
        created_at=0.0,
        questions=tuple(Question(question=t, choices=("A", "B"), multiple=multiple) for t in texts),
    )


def test_approvals_come_first_then_each_question_and_one_agent_at_a_time() -> None:
    """A pause shows its approvals first, then one question at a time, and one agent path at a time."""
    requests: list[Request] = [
        question("q1", "Which?"),
        approval("a1", "delete_file", "c1"),
        approval("a2", "restart_pod", "c2", path="ops/k8s"),
    ]
    view = pause_view("run_top", requests)
    assert view is not None and view.kind == "approval" and [r.request_id for r in view.requests] == ["a1"]
    view = pause_view("run_top", requests[2:])
    assert view is not None and view.subagent == "k8s"
    view = pause_view("run_top", requests[:1])
    assert view is not None and view.kind == "question"


CHILD = RemoteTask(url="http://127.0.0.1:9/a2a/k8s_agent", task_id="task-C", context_id="ctx-C")


def remote_view(view: PauseView | None, remote: RemoteTask = CHILD) -> PauseView:
    """A view whose delegate is a remote agent (the handler adds this after one read)."""
    assert view is not None
    return replace(view, remote=remote)


def mirrored(ask_id: str, tool: str, call_id: str, **args: Any) -> ApprovalRequest:
    """A remote child's approval as sayso mirrors it: the child's id as the call id, its call id in the payload."""
    request = approval(f"req-{ask_id}", tool, ask_id, path="ops/k8s_agent", **args)
    return replace(request, payload={"remote_agent": CHILD.url, "call_id": call_id})


def test_a_remote_childs_approvals_carry_the_nested_block_with_the_childs_own_ids() -> None:
    """A remote delegate's approvals show as the parent's call with a `nested` block naming the child's task,
    context and ids (docs/guides/a2a.md#remote-agents-as-delegates); responses name the child ids."""
    view = remote_view(
        pause_view(
            "run_top",
            [
                mirrored("adk-c1", "delete_pod", "call_c1", name="obsolete"),
                mirrored("adk-c2", "restart_pod", "call_c2", name="api"),
            ],
        )
    )
    text = "Remote agent 'k8s_agent' requires approval for tool(s): delete_pod, restart_pod (k8s_agent)"
    assert view_text(view) == text
    assert request_payload(view) == {
        "type": "tool_approval_request",
        "hint": text,
        "tools": [{"id": "run_top/k8s_agent", "call_id": "run_top/k8s_agent", "name": "k8s_agent", "args": {}}],
        "nested": {
            "subagent_name": "k8s_agent",
            "task_id": "task-C",
            "context_id": "ctx-C",
            "tools": [
                {"id": "adk-c1", "call_id": "call_c1", "name": "delete_pod", "args": {"name": "obsolete"}},
                {"id": "adk-c2", "call_id": "call_c2", "name": "restart_pod", "args": {"name": "api"}},
            ],
        },
    }
    # The client returns the child ids; the parent's id counts as unknown.
    refused = {"type": "tool_approval_response", "approvals": [{"id": "run_top/k8s_agent", "approved": True}]}
    with pytest.raises(InvalidInput, match="missing ids: adk-c1, adk-c2") as refusal:
        decisions_from_v1(view, refused)
    assert refusal.value.field == HITL_RESPONSE
    response = {
        "type": "tool_approval_response",
        "approvals": [
            {"id": "adk-c2", "approved": False, "rejection_reason": "not now"},
            {"id": "adk-c1", "approved": True},
        ],
    }
    decided = [(r.request_id, d) for r, d in decisions_from_v1(view, response)]
    assert decided == [("req-adk-c1", Approve()), ("req-adk-c2", Reject(reason="not now"))]


def test_a_local_delegates_pause_names_its_run_and_reads_agent_not_remote_agent() -> None:
    """A local delegate's pause names the delegate's own run and thread, with sayso's request ids, and its hint
    does not call it remote."""
    view = pause_view("run_top", [approval("c1", "delete_pod", "call_c1", path="ops/k8s_agent")])
    assert view is not None
    assert view_text(view) == "Agent 'k8s_agent' requires approval for tool(s): delete_pod (k8s_agent)"
    nested = request_payload(view)["nested"]
    assert (nested["task_id"], nested["context_id"], nested["tools"][0]["id"]) == ("run_child", "thr_child", "c1")


def test_a_remote_childs_question_is_answered_with_the_childs_id() -> None:
    """A remote delegate's question is answered with the child's id, never the parent's."""
    asked = replace(
        question("req-g", "What is the GitHub owner/org for the repo?", path="ops/github_agent"), tool_call_id="adk-g4"
    )
    view = remote_view(pause_view("run_top", [asked]), RemoteTask(url="u", task_id="task-G", context_id="ctx-G"))
    payload: dict[str, Any] = dict(request_payload(view))
    assert payload["id"] == "run_top/github_agent"
    assert (payload["nested"]["task_id"], payload["nested"]["context_id"]) == ("task-G", "ctx-G")
    assert payload["nested"]["tools"] == [
        {
            "id": "adk-g4",
            "call_id": "adk-g4",
            "name": "ask_user",
            "args": {
                "questions": [
                    {"question": "What is the GitHub owner/org for the repo?", "choices": ["A", "B"], "multiple": False}
                ]
            },
        }
    ]
    assert (
        view_text(view) == "Remote agent 'github_agent' asks: What is the GitHub owner/org for the repo? (github_agent)"
    )
    with pytest.raises(InvalidInput, match="parent's id"):
        decisions_from_v1(
            view, {"type": "ask_user_response", "id": "run_top/github_agent", "answers": [{"answer": ["x"]}]}
        )
    ((_, decision),) = decisions_from_v1(
        view, {"type": "ask_user_response", "id": "adk-g4", "answers": [{"answer": ["kagent-dev"]}]}
    )
    assert decision == Answer(answers=(("kagent-dev",),))


def test_unknown_keys_in_a_kagent_response_are_ignored() -> None:
    """Keys kagent's format does not define are ignored in its response and approvals, as its wire reference says."""
    view = pause_view("run_top", [approval("a1", "delete_file", "c1")])
    assert view is not None
    extra = {"type": "tool_approval_response", "approvals": [{"id": "a1", "approved": True, "note": "x"}], "more": 1}
    assert [d for _, d in decisions_from_v1(view, extra)] == [Approve()]


def test_the_known_keys_of_a_response_are_type_checked() -> None:
    """Each key kagent defines is checked, and a bad one refuses the whole response; a reason may sit on an approval."""
    view = pause_view("run_top", [approval("a1", "delete_file", "c1")])
    assert view is not None
    approved = {"id": "a1", "approved": True, "rejection_reason": None}
    assert [d for _, d in decisions_from_v1(view, {"type": "tool_approval_response", "approvals": [approved]})] == [
        Approve()
    ]
    with pytest.raises(InvalidInput, match="rejection_reason"):
        decisions_from_v1(
            view,
            {"type": "tool_approval_response", "approvals": [{"id": "a1", "approved": False, "rejection_reason": 3}]},
        )


# --- legacy 0.x


def test_the_legacy_pause_is_one_confirmation_data_part_per_call() -> None:
    """kagent 0.x pauses are one `adk_request_confirmation` DataPart per call, marked long-running."""
    view = pause_view(
        "run_top",
        [approval("a1", "delete_file", "call_91", hint="Tool 'delete_file' requires approval before execution.")],
    )
    assert view is not None
    ((data, metadata),) = legacy_parts(view)
    assert data == {
        "name": "adk_request_confirmation",
        "id": "a1",
        "args": {
            "originalFunctionCall": {"name": "delete_file", "args": {}, "id": "call_91"},
            "toolConfirmation": {
                "hint": "Tool 'delete_file' requires approval before execution.",
                "confirmed": False,
                "payload": None,
            },
        },
    }
    assert metadata["kagent_type"] == "function_call" and metadata["kagent_is_long_running"] is True
    assert metadata["adk_type"] == "function_call" and metadata["adk_is_long_running"] is True


def two_calls() -> Any:
    view = pause_view("run_top", [approval("a1", "delete_file", "call_1"), approval("a2", "restart_pod", "call_2")])
    assert view is not None
    return view


def test_legacy_uniform_and_batch_decisions() -> None:
    """kagent 0.x approve, reject and batch decisions map to one decision per call shown."""
    view = two_calls()
    assert [d for _, d in decisions_from_legacy(view, LegacyInput(decision={"decision_type": "approve"}))] == [
        Approve(),
        Approve(),
    ]
    rejected = decisions_from_legacy(
        view, LegacyInput(decision={"decision_type": "reject", "rejection_reason": "Wrong environment"})
    )
    assert [d for _, d in rejected] == [Reject(reason="Wrong environment")] * 2
    batch = {
        "decision_type": "batch",
        "decisions": {"call_1": "approve", "call_2": "reject"},
        "rejection_reasons": {"call_2": "Wrong environment", "call_1": ""},
    }
    assert [d for _, d in decisions_from_legacy(view, LegacyInput(decision=batch))] == [
        Approve(),
        Reject(reason="Wrong environment"),
    ]


@pytest.mark.parametrize(
    ("decisions", "problem"),
    [
        pytest.param({"call_1": "approve"}, "missing ids: call_2", id="left-out-is-refused-not-approved"),
        pytest.param({"call_1": "approve", "call_2": "maybe"}, "missing ids: call_2", id="invalid-value-dropped"),
        pytest.param({}, "missing ids: call_1, call_2", id="empty-batch"),
        pytest.param(
            {"call_1": "approve", "call_2": "approve", "call_x": "approve"}, "unknown ids: call_x", id="unknown"
        ),
    ],
)
def test_a_legacy_batch_that_leaves_a_call_out_is_refused(decisions: dict[str, str], problem: str) -> None:
    """A batch that leaves a call out, or names one not shown, is refused, never partly approved."""
    with pytest.raises(InvalidInput, match=problem):
        decisions_from_legacy(two_calls(), LegacyInput(decision={"decision_type": "batch", "decisions": decisions}))


def test_legacy_ask_user_answers() -> None:
    """kagent 0.x answers a question with `ask_user_answers`; a reject skips it; anything else is refused."""
    view = pause_view("run_top", [question("q1", "Which database?", "Which features?")])
    assert view is not None
    ((data, _),) = legacy_parts(view)
    assert data["args"]["originalFunctionCall"]["name"] == "ask_user"
    assert data["args"]["toolConfirmation"]["hint"] == "Which database?; Which features?"
    answers = {
        "decision_type": "approve",
        "ask_user_answers": [{"answer": ["PostgreSQL"]}, {"answer": ["Auth", "Caching"]}],
    }
    ((_, decision),) = decisions_from_legacy(view, LegacyInput(decision=answers))
    assert decision == Answer(answers=(("PostgreSQL",), ("Auth", "Caching")))
    with pytest.raises(InvalidInput, match="ask_user_answers"):
        decisions_from_legacy(view, LegacyInput(decision={"decision_type": "approve"}))
    with pytest.raises(InvalidInput, match="non-empty"):
        decisions_from_legacy(view, LegacyInput(decision={"decision_type": "approve", "ask_user_answers": []}))
    ((_, skipped),) = decisions_from_legacy(view, LegacyInput(decision={"decision_type": "reject"}))
    assert isinstance(skipped, Skip)
