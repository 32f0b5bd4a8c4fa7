"""The rule a decision is judged by inside the transaction that records it: pure, over what the store read.

See docs/concepts/decisions.md and docs/guides/routing.md#quorum.

The decide verb builds a `DecisionAsk` up front (who decides what, when, and the few facts about
this runtime the rule needs: which top-level runs the decision's own commit may claim, the id a
grant would get, the subject an edit would have). The store's `decide_request` reads the request,
its run, votes and pause, and calls `judge` on them, possibly again when a concurrent writer got
in the way; the verdict says what to write. Nothing here does I/O or calls back into the runtime:
the store imports this rule, and the runtime hands the store only data.

Who may decide, whether a request takes votes, whether an edit keeps the subject the person saw,
whether a held form's holder is still there, and which grant an approval creates each live once,
here; the answer verb applies the same functions before its batch is recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from ..exceptions import AlreadyDecided, CallEnded, InvalidDecision, NotAllowed, RequestNotFound
from .access import Principal, may_see_request, refusal
from .advance import approved_calls
from .audit_events import AuditEvent, audit_body
from .decisions import Approve, Decision, DecisionRecord, Reject, Via, check_decision
from .grants import Grant
from .pauses import PauseState, RequestState
from .requests import ApprovalRequest, ElicitationRequest, Request, Subject, is_remote_call, unredacted
from .resume import open_requests, plan_resume
from .votes import Vote, same_as_shown, tally, vote_event


class RunAsRead(Protocol):
    """What the rule reads of the run that raised a request (the store's `RunRecord` has it)."""

    @property
    def run_id(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def principal(self) -> str | None: ...
    @property
    def parent_run_id(self) -> str | None: ...
    @property
    def lease_holder(self) -> str | None: ...
    @property
    def lease_expires_at(self) -> float | None: ...


@dataclass(frozen=True, kw_only=True)
class ResumeClaim:
    """What a verdict adds when its decision was the last one a paused run waited for: the run resumes now."""

    executing: Sequence[str] = ()
    """The approved requests whose calls the resumed segment runs: their ledger marks are written in the commit."""
    added: Sequence[DecisionRecord] = ()
    """Decisions the resume takes itself (skips), recorded in the same commit."""
    audit: Sequence[AuditEvent] = ()
    """Audit records of `added`."""
    grants_of: str | None = None
    """Read this principal's active grants with the history, for the resumed segment's gate."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What to write for a decision, as `judge` rules on what the store read (`RunStore.decide_request`)."""

    record: DecisionRecord | None
    """The decision to record; `None` when there is nothing to record (the same decision again)."""
    audit: Sequence[AuditEvent] = ()
    """Audit records of `record`."""
    grant: Grant | None = None
    """A grant the decision creates."""
    resume: ResumeClaim | None = None
    """Consume the pause and claim the run in the same commit."""
    vote: Vote | None = None
    """A vote to record after the request's votes as read (a concurrent vote first: the judge rules again)."""


@dataclass(frozen=True, kw_only=True)
class DecisionAsk:
    """One decision as the decide verb asks for it, with what the rule needs to know of the runtime."""

    request_id: str
    decision: Decision
    principal: Principal
    """Who decides."""
    now: float
    via: Via | None = None
    resume: bool = True
    """Whether the decision may resume the run (`False`: record only)."""
    holder: str
    """This runtime as a lease holder: a pause it holds itself is carried on here."""
    claims_with_decision: bool = True
    """Whether a top-level agent run's last decision claims the run in its own commit (`False` when an
    engine elsewhere resumes top-level runs)."""
    workflows: frozenset[str] = frozenset()
    """The runtime's workflows: their runs read their state with the claim, after the decision's commit."""
    grant_id: str
    """The id the grant an approval with a wider scope creates gets."""
    host_keeps_grants: bool = False
    """A host keeps remembered approvals for this call: the decision stores none."""
    edited_subject: Subject | None = None
    """What the decision's edited arguments would be approved for, as the gate of the request's agent
    says (`None`: no approval at all); read only when the decision edits an approval's arguments."""
    feedback: Mapping[str, str] | None = None
    """How an approval's feedback breaks the Python type the tool asked it in (`ApprovalRequest.response_type`), by
    field path, as the deciding process checked it before the transaction; empty when it fits; `None`: unchecked."""


def judge(ask: DecisionAsk, found: RequestState, run: RunAsRead, state: PauseState, *, gone: bool) -> Verdict:
    """Rule on `ask` for the request, its run and its pause as read; raises to refuse (nothing is written).

    `gone`: the run's lease holder is a process of this host that no longer exists. The store may
    call this again on what is there now when a concurrent writer got in the way.
    """
    request, principal, now = found.request, ask.principal, ask.now
    decision = keep_secrets(request, ask.decision)
    check_allowed(request, principal)
    check_holder(found, run, now, gone=gone)
    given = decision
    if needs_votes(request) and isinstance(decision, Approve):
        given = same_as_shown(request, found.votes, decision)  # the arguments shown are no edit
    to_record = check_decision(request, given, existing=found.decision, now=now)
    if to_record is None:
        return Verdict(record=None)  # the same decision again: a harmless no-op
    if found.pause_status != "open":
        raise AlreadyDecided(request.request_id, "its pause was already resumed or closed")
    check_feedback(request, to_record, ask.feedback)
    check_same_subject(request, to_record, ask.edited_subject)
    vote: Vote | None = None
    audit: list[AuditEvent] = []
    if needs_votes(request) and isinstance(to_record, Approve | Reject):
        counted = tally(
            request, found.votes, to_record, principal=principal.name, now=now, via=ask.via, alone=principal.local
        )
        if counted.vote is None:
            return Verdict(record=None)  # this person's approval is counted already
        vote, audit = counted.vote, [vote_event(request, counted.vote, counted.quorum)]
        if counted.resolved is None:
            return Verdict(record=None, audit=audit, vote=vote)  # the pause waits for more approvals
        to_record = counted.resolved
    record = DecisionRecord(
        request_id=request.request_id,
        decision=to_record,
        by="person",
        principal=principal.name,
        decided_at=now,
        via=ask.via,
    )
    grant = grant_from(
        request, to_record, now, giver=principal, grant_id=ask.grant_id, host_keeps_grants=ask.host_keeps_grants
    )
    verdict = Verdict(record=record, audit=[*audit, audit_body(request, record)], grant=grant, vote=vote)
    decided = {**state.decisions, request.request_id: record}
    if (
        not ask.resume
        or not ask.claims_with_decision
        or run.parent_run_id is not None
        or run.agent in ask.workflows
        or run.status != "paused"
        or open_requests(state.requests, decided)
        or (hold_alive(run, now, gone=gone) and run.lease_holder != ask.holder)
    ):
        # Delegates, pauses still waiting and workflows (whose resume reads their state with the
        # claim) go the general way, after the commit; a pause another live process holds is
        # carried on by that process.
        return verdict
    plan = plan_resume(run.run_id, state.requests, decided, force=False, now=now)
    executing = list(approved_calls(state.requests, plan))
    return replace(verdict, resume=ResumeClaim(executing=executing, grants_of=run.principal or ""))


def check_allowed(request: Request, principal: Principal) -> None:
    """The thread's owner or an approver for its root agent decides; a routed request, its approvers only.

    Someone who may not even see the request is told it does not exist, as for a made-up id: the
    refusal would tell an outsider that the id is real and who decides it. Someone who sees it but
    may not decide it (the run's starter, under separation of duties) is told why.
    See docs/guides/rest.md#who-may-call and docs/guides/routing.md.
    """
    owner, agent_path, routing = request.principal, request.agent_path, request.routing
    why = refusal(principal, owner=owner, agent_path=agent_path, routing=routing)
    if why is None:
        return
    if not may_see_request(principal, owner=owner, agent_path=agent_path, routing=routing):
        raise RequestNotFound(request.request_id)
    raise NotAllowed(request.request_id, why)


def settled_already(found: RequestState, decision: Decision, principal: Principal, *, now: float) -> bool:
    """Whether what the store holds already answers a decision an engine elsewhere would judge (`judge`'s own steps).

    `True`: the same decision again, a no-op. `False`: the request is open, for the engine to judge.

    Raises:
        RequestNotFound, NotAllowed: the principal may not decide it (`check_allowed`).
        AlreadyDecided: a different decision was taken first, or the pause was resumed or closed without one.
        RequestExpired, InvalidDecision: as `check_decision` says, before the pause's state is told.
    """
    request = found.request
    check_allowed(request, principal)
    if found.decision is None and found.pause_status == "open":
        return False
    given = keep_secrets(request, decision)
    if needs_votes(request) and isinstance(given, Approve):
        given = same_as_shown(request, found.votes, given)
    if check_decision(request, given, existing=found.decision, now=now) is None:
        return True
    raise AlreadyDecided(request.request_id, "its pause was already resumed or closed")


def keep_secrets(request: Request, decision: Decision) -> Decision:
    """An approval whose edited arguments keep the redacted fields the person saw as `REDACTED` and left so.

    Every interface shows them so, and sends them back so with an edit (or the arguments a vote names):
    the call runs with the secret, never with the placeholder.
    """
    if not edits_arguments(request, decision) or not request.redact:
        return decision
    assert isinstance(decision, Approve) and decision.edited_args is not None
    return replace(decision, edited_args=unredacted(decision.edited_args, request.args, request.redact))


def needs_votes(request: Request) -> bool:
    """Whether a request is decided by several approvers' votes (docs/guides/routing.md#quorum)."""
    return (
        isinstance(request, ApprovalRequest) and request.routing is not None and request.routing.approvals_required > 1
    )


def edits_arguments(request: Request, decision: Decision) -> bool:
    """Whether `decision` approves `request` with edited arguments (which must keep its subject)."""
    return isinstance(request, ApprovalRequest) and isinstance(decision, Approve) and decision.edited_args is not None


def check_feedback(request: Request, decision: Decision, problems: Mapping[str, str] | None) -> None:
    """Refuse an approval whose feedback the tool's own type refuses, though its JSON Schema let it through.

    `problems` is that type's verdict (`DecisionAsk.feedback`); a request that names a type is never
    approved unchecked: without the verdict the approval is refused.
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve) or request.response_type is None:
        return
    if decision.payload is None:
        return  # no feedback: whether the tool needs some, its JSON Schema said (`check_decision`)
    if problems is None:
        problems = {"": f"cannot be checked here: the tool checks it with {request.response_type}"}
    if problems:
        listed = "; ".join(f"{where}: {why}" if where else why for where, why in problems.items())
        raise InvalidDecision(request.request_id, "payload: " + listed, fields=dict(problems))


def check_same_subject(request: Request, decision: Decision, edited_subject: Subject | None) -> None:
    """An edit must keep the subject the person saw: a remembered decision never reaches further.

    `edited_subject` is what the edited arguments would be approved for (`None`: nothing).
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve):
        return
    if decision.edited_args is not None and is_remote_call(request):
        raise InvalidDecision(
            request.request_id, "a remote agent's call cannot be edited from here (kagent's HITL has no edits)"
        )
    if decision.edited_args is None or request.subject is None or request.service_request is not None:
        return
    if edited_subject is None or edited_subject.key != request.subject.key:
        shown = edited_subject.label if edited_subject else "no approval at all"
        raise InvalidDecision(
            request.request_id, f"the edit changes what the approval covers ({request.subject.label} → {shown})"
        )


def grant_from(
    request: Request, decision: Decision, now: float, *, giver: Principal, grant_id: str, host_keeps_grants: bool
) -> Grant | None:
    """The grant an approval with a wider scope creates; none for service-enforced requests, or when a host keeps them.

    This is the one place a grant is made. It is given for the agent that asked (its whole path)
    and reaches no further: always allowing a delegate's call never lets its coordinator or a
    sibling delegate call the same tool unasked.

    See docs/concepts/decisions.md#scopes-remembering-an-approval.
    """
    if not isinstance(request, ApprovalRequest) or not isinstance(decision, Approve) or decision.scope == "once":
        return None
    if host_keeps_grants:
        return None  # the host keeps remembered approvals for this call; sayso stores none
    if request.service_request is not None or request.subject is None:
        return None
    return Grant(
        grant_id=grant_id,
        tool=request.tool_name,
        subject_key=request.subject.key,
        subject_label=request.subject.label,
        scope=decision.scope,
        principal=request.principal or "",
        agent=request.agent_path,
        # "Allow for this chat": the person's chat, also when a delegate (with a thread of its own) asked.
        thread_id=(request.chat_thread_id or request.thread_id) if decision.scope == "thread" else None,
        created_at=now,
        granted_by=giver.name,
    )


# held forms (docs/guides/mcp.md#which-answers-survive-a-restart)


def needs_holder(request: Request) -> bool:
    """Whether only the process holding the live call that asked `request` can deliver its answer."""
    return isinstance(request, ElicitationRequest) and request.needs_holder


def hold_alive(run: RunAsRead, now: float, *, gone: bool) -> bool:
    """Whether a paused run is held by a process that may still be alive (its hold renewed, and not `gone`)."""
    return (
        run.status == "paused"
        and run.lease_holder is not None
        and run.lease_expires_at is not None
        and run.lease_expires_at >= now
        and not gone
    )


def closed_by_sayso(record: DecisionRecord) -> bool:
    """Whether a decision is sayso closing a form whose holder had gone (the only cancel sayso takes)."""
    return record.by == "system" and record.decision.kind == "cancel"


def check_holder(found: RequestState, run: RunAsRead, now: float, *, gone: bool) -> None:
    """Refuse a decision on a form nobody can deliver any more: its holder is gone, or sayso closed it.

    Raises:
        CallEnded: the live call that asked the form ended (with the process holding it, or its server ended it).
    """
    request = found.request
    if not needs_holder(request):
        return
    existing = found.decision
    if existing is not None and closed_by_sayso(existing):
        raise CallEnded(request.request_id, _ended(request), holder=None)
    if existing is not None or found.pause_status != "open" or hold_alive(run, now, gone=gone):
        return  # a decision already taken, or a consumed pause, is said by the decision's own check
    raise CallEnded(request.request_id, _ended(request), holder=run.lease_holder)


def _ended(request: Request) -> str:
    server = f"MCP server {request.server!r}" if isinstance(request, ElicitationRequest) and request.server else "it"
    return (
        f"the call that asked this has ended: the process that held it stopped or {server} ended the call, "
        "so no answer can reach it; "
        "the request was closed as cancelled and the agent went on without this answer"
    )
