"""The rules a decision is checked by before it is recorded, and the grant it creates: each lives once, here.

Decide and answer both apply them: who may decide, whether a request is decided by votes, whether
an edit keeps the subject the person saw, and which grant (if any) an approval with a wider scope creates.
"""

from __future__ import annotations

from ..._core.access import Principal, refusal, root_agent
from ..._core.decisions import Approve, Decision
from ..._core.grants import Grant
from ..._core.requests import ApprovalRequest, Request
from ...exceptions import InvalidDecision, NotAllowed
from .. import _remote
from .._kernel import Kernel, new_id
from .._runner import CallOptions


def check_allowed(request: Request, principal: Principal) -> None:
    """The thread's owner or an approver for its root agent decides; a routed request, its approvers only.

    See docs/guides/rest.md#who-may-call and docs/guides/routing.md.
    """
    why = refusal(principal, owner=request.principal, agent_path=request.agent_path, routing=request.routing)
    if why is not None:
        raise NotAllowed(request.request_id, why)


def needs_votes(request: Request) -> bool:
    """Whether a request is decided by several approvers' votes (docs/guides/routing.md#quorum)."""
    return (
        isinstance(request, ApprovalRequest) and request.routing is not None and request.routing.approvals_required > 1
    )


def edits_arguments(request: Request, decision: Decision) -> bool:
    """Whether `decision` approves `request` with edited arguments (which must keep its subject)."""
    return isinstance(request, ApprovalRequest) and isinstance(decision, Approve) and decision.edited_args is not None


def check_same_subject(k: Kernel, request: Request, decision: Decision, *, agent: str) -> None:
    """An edit must keep the subject the person saw: a remembered decision never reaches further.

    `agent` is the agent whose run raised the request (its gate knows the subject).
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve):
        return
    if decision.edited_args is not None and _remote.is_remote_call(request):
        raise InvalidDecision(
            request.request_id, "a remote agent's call cannot be edited from here (kagent's HITL has no edits)"
        )
    if decision.edited_args is None or request.subject is None or request.service_request is not None:
        return
    gate = k.built(agent).gate
    subject = gate.subject_for(request.tool_name, decision.edited_args)
    if subject is None or subject.key != request.subject.key:
        shown = subject.label if subject else "no approval at all"
        raise InvalidDecision(
            request.request_id, f"the edit changes what the approval covers ({request.subject.label} → {shown})"
        )


def grant_from(
    request: Request, decision: Decision, now: float, *, giver: Principal, options: CallOptions
) -> Grant | None:
    """The grant an approval with a wider scope creates; none for service-enforced requests, or when a host keeps them.

    This is the one place a grant is made. It is given for the request's root agent and reaches
    no further: an approver for one agent never lets calls through another.

    See docs/concepts/decisions.md#scopes-remembering-an-approval.
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve) or decision.scope == "once":
        return None
    if options.host_keeps_grants:
        return None  # the host keeps remembered approvals for this call; sayso stores none
    if request.service_request is not None or request.subject is None:
        return None
    return Grant(
        grant_id=new_id("grt"),
        tool=request.tool_name,
        subject_key=request.subject.key,
        subject_label=request.subject.label,
        scope=decision.scope,
        principal=request.principal or "",
        agent=root_agent(request.agent_path),
        # "Allow for this chat": the person's chat, also when a delegate (with a thread of its own) asked.
        thread_id=(request.chat_thread_id or request.thread_id) if decision.scope == "thread" else None,
        created_at=now,
        granted_by=giver.name,
    )
